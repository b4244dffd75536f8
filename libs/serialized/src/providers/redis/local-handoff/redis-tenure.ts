import type { Floor } from '../protocol/floor';
import { performance } from 'node:perf_hooks';
import { URGENT, type RedisConnection } from '../transport/redis-connection';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import type { RedisScripts } from '../protocol/redis-scripts';

/** The next block of fencing tokens of a tenure, reserved while the current one was still in use. */
export interface NextBlock {
  readonly fence: bigint;
  readonly last: bigint;
  /** Until when (performance.now()) the key is surely the tenure's: the refill renewed or left a longer lease. */
  readonly until: number;
}

/** A refill on its way (an identity: a reply to an earlier one is told apart). */
interface Asking {
  readonly asking: true;
}

/** One tenure: this process holds `key` in Redis under `token`. */
export class Tenure {
  /** The fencing token of the tenure's current (or last) holder. */
  issued: bigint;
  /** Queue place of the first waiter of another process known to be queued. */
  floor: Floor;
  /** Local hand-offs since a waiter of another process became known to be queued (cohort mode's bound). */
  ahead = 0;
  /** Owner tokens of the waiters served in-process (their places leave the queue at the release). */
  served: string[] = [];
  /** The next block: being reserved, reserved, or not to be asked for again (the key was not ours). */
  refill: Asking | 'refused' | NextBlock | undefined;

  constructor(
    readonly key: string,
    readonly token: string,
    readonly keys: RedisLockKeys,
    fence: bigint,
    /** The last fencing token of the block reserved when the tenure began (or was kept). */
    public last: bigint,
    floor: Floor,
  ) {
    this.issued = fence;
    this.floor = floor;
  }

  /** The next block, if reserved. */
  get ready(): NextBlock | undefined {
    const next = this.refill;
    return typeof next === 'object' && 'fence' in next ? next : undefined;
  }

  /** A release kept the key with a block of its own: a refill on its way is stale. */
  kept(last: bigint): void {
    this.last = last;
    this.refill = undefined;
  }

  /**
   * Riders wait beyond this block: reserves the next one now (release.lua with
   * `keep`, which also removes the served waiters' places and never shortens the
   * lease), so the hand-off at the block's end needs no round trip. Its reply says
   * whether a waiter of another process is queued (`learned`).
   */
  askRefill(connection: RedisConnection, scripts: RedisScripts, leaseMs: number, learned: (floor: Floor) => void, forget: (served: readonly string[]) => void): void {
    if (this.refill !== undefined) return;
    const ask: Asking = { asking: true };
    this.refill = ask;
    const served = this.served;
    this.served = [];
    let sentAt = -Infinity;
    connection
      .run(this.key, (client) => ((sentAt = performance.now()), scripts.release.run(client, this.keys, this.token, served, leaseMs)), URGENT)
      .then(
        (result) => {
          forget(served);
          // Asked again since (a release kept the key meanwhile, with a later block): this one is stale.
          if (this.refill !== ask) return;
          if (!result.kept) return void (this.refill = 'refused');
          const fence = BigInt(result.kept.fence);
          // Tokens only ever increase: a block below the current one is never used.
          this.refill = fence > this.last ? { fence, last: BigInt(result.kept.last), until: sentAt + result.kept.px } : undefined;
          learned(result.kept.floor);
        },
        () => {
          // Their places lapse with their heart-beats; the block's end goes to Redis as usual.
          forget(served);
          if (this.refill === ask) this.refill = 'refused';
        },
      );
  }

  /** At the block's end: the next block if it is here (it becomes the current one), else undefined. */
  takeRefill(): NextBlock | undefined {
    const next = this.ready;
    if (!next || next.fence <= this.issued) return undefined;
    this.refill = undefined;
    this.last = next.last;
    return next;
  }
}
