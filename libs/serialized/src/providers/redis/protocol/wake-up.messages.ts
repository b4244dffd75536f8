import { floorOf } from './queue.floor';
import type { HandOff } from './hand-off.reply';

/**
 * A message on a process's wake-up channel: a hand-off "<member> <fence> <px>
 * <last> <floor>" (common.lua's `grant_next`), or a notice "<owner> <place>"
 * (acquire.lua: a waiter of another process queued at `place` behind `owner`).
 */
export type ChannelMessage =
  { readonly kind: 'hand-off'; readonly handOff: HandOff } | { readonly kind: 'notice'; readonly owner: string; readonly place: number };

/** The message `text` says, or undefined for anything else. */
export function messageOf(text: string): ChannelMessage | undefined {
  const fields = text.split(' ');
  if (fields.length === 2) return { kind: 'notice', owner: fields[0], place: Number(fields[1]) };
  if (fields.length !== 5) return undefined;
  const [member, fence, px, last, floor] = fields;
  return { kind: 'hand-off', handOff: { member, fence: Number(fence), px: Number(px), last: Number(last), floor: floorOf(floor) } };
}
