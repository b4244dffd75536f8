import { floorOf, type Floor } from './queue.floor';
import { type RedisLockKeys, HandOffScript, handOffOf, type HandOff, type ScriptClient } from './hand-off.reply';

/** What acquire.lua is asked. */
export interface AcquireArgs {
  readonly keys: RedisLockKeys;
  readonly token: string;
  readonly leaseMs: number;
  /** `wait`: take a place in the queue when the key is not free; `try`: only a free key will do. */
  readonly mode: 'wait' | 'try';
}

/** What acquire.lua answered. */
export interface AcquireResult {
  /**
   * `granted`: the token holds the key (`fence` its fencing token, `pttl` its lease);
   * `queued`: it has a place (`fence`, its token once granted; `pttl`: what is left of the holder's lease);
   * `busy`: mode `try` and the key is held or waited for;
   * `twice`: the token already holds the key (the call reached Redis twice).
   */
  readonly status: 'granted' | 'queued' | 'busy' | 'twice';
  readonly fence: number;
  readonly pttl: number;
  /** A waiter the call passed the free key to on its way. */
  readonly handed: HandOff | undefined;
  /** `granted`: the last fencing token of the block reserved with `fence`. */
  readonly last: number;
  /**
   * `queued` while a holder of this process's session holds the key: the place of the
   * first waiter of another process (`Floor.NONE`: none); `Floor.UNKNOWN` otherwise (or not among the first 64).
   */
  readonly floor: Floor;
}

const STATUS = { 1: 'granted', 0: 'queued', [-1]: 'busy', 2: 'twice' } as const;

/** Gateway to acquire.lua: take the key, or a place in its queue, in one round trip. */
export class AcquireScript extends HandOffScript {
  async run(client: ScriptClient, args: AcquireArgs): Promise<AcquireResult> {
    const { keys } = args;
    const reply = (await this.script.run(client, [
      keys.lock,
      keys.queue,
      keys.heartbeats,
      keys.fence,
      keys.holders,
      keys.shapes,
      args.token,
      args.leaseMs,
      args.mode,
      this.settings.heartbeatMs,
      ...this.passOn,
    ])) as [number, number, number, string, number, number, number, number, number, number];
    const [status, fence, pttl, member, handedFence, handedPx, handedLast, handedFloor, last, floor] = reply;
    const decoded = STATUS[status as keyof typeof STATUS];
    if (decoded === undefined) throw new Error(`acquire.lua answered an unknown status ${status}`);
    return {
      status: decoded,
      fence: Number(fence),
      pttl: Number(pttl),
      handed: handOffOf(member, handedFence, handedPx, handedLast, handedFloor),
      last: Number(last),
      floor: floorOf(floor),
    };
  }
}
