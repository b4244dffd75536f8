import { floorOf, type Floor } from './queue.floor';
import type { ScriptClient } from '../../../internal/lua.script';

export type { ScriptClient } from '../../../internal/lua.script';

/** The Redis keys of one lock, as the scripts take them (`RedisKeyspace` names them). */
export interface RedisLockKeys {
  readonly lock: string;
  readonly queue: string;
  readonly heartbeats: string;
  readonly fence: string;
  readonly holders: string;
  readonly shapes: string;
}

/**
 * What every script that can pass a key on needs to know about this process and
 * the keyspace (common.lua's `grant_next`).
 */
export interface HandOffSettings {
  /** How long a waiter keeps its place without a heart-beat; also the most a hand-off grants before the new holder renews. */
  readonly heartbeatMs: number;
  /** Prefix of every process's wake-up channel. */
  readonly channelPrefix: string;
  /** This process's session: waiters of its own are told by the reply, not by a message. */
  readonly session: string;
  /**
   * Fencing tokens a process reserves when it gets a key from Redis: one for the
   * holder, the rest for local hand-offs to its own next waiters (see `TenureRegistry`).
   */
  readonly block: number;
}

/** A script passed the key to `member` (a waiter), with its fencing token and `px` ms of lease. */
export interface HandOff {
  readonly member: string;
  readonly fence: number;
  readonly px: number;
  /** The last token of the block reserved with `fence` (`fence` itself: no local hand-offs). */
  readonly last: number;
  /**
   * The queue place of the first waiter of another process at the hand-off
   * (`Floor.NONE`, `Floor.UNKNOWN`): local hand-offs stay behind it.
   */
  readonly floor: Floor;
}

/** The reply of a script that may end by passing the key on (release, leave). */
export interface PassOnResult {
  /** `released`: the key was this token's and is now free; `handed`: passed to `handed.member`; `none`: nothing to do. */
  readonly status: 'none' | 'released' | 'handed' | 'kept';
  readonly handed: HandOff | undefined;
  /**
   * `kept` (release.lua with `keep`): the key stays the caller's, `px` ms from the
   * call, with a fresh block `fence`..`last`; `floor`: the place of the first waiter
   * of another process.
   */
  readonly kept?: { readonly fence: number; readonly px: number; readonly last: number; readonly floor: Floor };
}

/** The arguments `grant_next` takes, in the scripts' order. */
export function handOffArgs(settings: HandOffSettings): readonly [number, string, string, number] {
  return [settings.heartbeatMs, settings.channelPrefix, settings.session, settings.block];
}

/**
 * A gateway to a script that may pass a free key on (`grant_next`): the script, and
 * the hand-off arguments every call sends after its own.
 */
export abstract class HandOffScript {
  protected readonly passOn: readonly [number, string, string, number];

  constructor(
    protected readonly script: RunnableScript,
    protected readonly settings: HandOffSettings,
  ) {
    this.passOn = handOffArgs(settings);
  }
}

/** A hand-off from five reply fields (`member` empty: none). */
export function handOffOf(member: unknown, fence: unknown, px: unknown, last: unknown, floor: unknown): HandOff | undefined {
  if (typeof member !== 'string' || member === '') return undefined;
  return { member, fence: Number(fence), px: Number(px), last: Number(last), floor: floorOf(floor) };
}

/** Decodes `{0} | {1} | {2, member, fence, px, last, floor} | {3, '', fence, px, last, floor}` (release.lua, leave.lua). */
export function passOnResultOf(reply: unknown): PassOnResult {
  const [status, member, fence, px, last, floor] = reply as [number, string?, number?, number?, number?, number?];
  if (status === 3)
    return { status: 'kept', handed: undefined, kept: { fence: Number(fence), px: Number(px), last: Number(last), floor: floorOf(floor) } };
  if (status === 2) return { status: 'handed', handed: handOffOf(member, fence, px, last, floor) };
  return { status: status === 1 ? 'released' : 'none', handed: undefined };
}

/** One loaded script a gateway runs. */
export interface RunnableScript {
  run(client: ScriptClient, keysAndArgs: readonly (string | number)[]): Promise<unknown>;
}
