import { floorOf, type Floor } from './queue.floor';
import { type RedisLockKeys, HandOffScript, handOffOf, type HandOff, type ScriptClient } from './hand-off.reply';

/** What heartbeat.lua answered. */
export interface HeartbeatResult {
  /** Owner token of the holder now (`undefined`: free). */
  readonly owner: string | undefined;
  /** What is left of the holder's lease (-2: no holder). */
  readonly pttl: number;
  /** A waiter the check passed the free key to. */
  readonly handed: HandOff | undefined;
  /**
   * The owner is one of the tokens asked about, handed the key by a message this
   * process missed or has not read yet: the block of fencing tokens that hand-off
   * reserved, the same the message carries (`fence` 0 otherwise).
   */
  readonly ownerBlock: { readonly fence: number; readonly last: number; readonly floor: Floor };
  /** Tokens asked about that are no longer queued (granted, or dropped after missing their heart-beats). */
  readonly missing: readonly string[];
}

/** Gateway to heartbeat.lua: one process's heart-beat for its waiters of one key (the "safety check"). */
export class HeartbeatScript extends HandOffScript {
  async run(client: ScriptClient, keys: RedisLockKeys, tokens: readonly string[]): Promise<HeartbeatResult> {
    const reply = (await this.script.run(client, [
      keys.lock,
      keys.queue,
      keys.heartbeats,
      keys.fence,
      keys.holders,
      keys.shapes,
      this.settings.heartbeatMs,
      ...this.passOn,
      ...tokens,
    ])) as (string | number)[];
    const owner = reply[0] as string;
    return {
      owner: owner === '' ? undefined : owner,
      pttl: Number(reply[1]),
      handed: handOffOf(reply[2], reply[3], reply[4], reply[5], reply[6]),
      ownerBlock: { fence: Number(reply[7]), last: Number(reply[8]), floor: floorOf(reply[9]) },
      missing: reply.slice(10) as string[],
    };
  }
}
