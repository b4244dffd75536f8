import { Floor } from '../protocol/queue.floor';
import type { RedisLockKeys } from '../protocol/redis.keyspace';
import type { PassOnResult } from '../protocol/hand-off.reply';

/** The next block of fencing tokens of a tenure, reserved while the current one was still in use. */
export interface NextBlock {
  readonly fence: bigint;
  readonly last: bigint;
  /** Until when (performance.now()) the key is surely the tenure's: the refill renewed or left a longer lease. */
  readonly until: number;
}

/** A refill on its way (an identity: a reply to an earlier one is told apart), with the served tokens it carries. */
export interface Refill {
  readonly asking: true;
  readonly tokens: readonly string[];
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
  refill: Refill | 'refused' | NextBlock | undefined;

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

  /** `learned`: a waiter of another process is known to be queued at `floor` (only ever lowers it). */
  lowerFloor(floor: Floor): void {
    if (floor < this.floor) this.floor = floor;
  }

  /**
   * `handOn`: the key passed in-process to the holder of `fence`; `served`, the
   * owner token of a waiter that had a place in the queue (it leaves at the release).
   */
  handedOn(fence: bigint, served: string | undefined): void {
    if (this.floor !== Floor.NONE) this.ahead++;
    if (served !== undefined) this.served.push(served);
    this.issued = fence;
  }

  /** The served waiters' tokens, handed to a release that removes their places (the list starts again). */
  takeServed(): string[] {
    const served = this.served;
    this.served = [];
    return served;
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
   * Riders wait beyond this block: the next one is to be reserved now (release.lua
   * with `keep`, which also removes the served waiters' places and never shortens
   * the lease), so the hand-off at the block's end needs no round trip. The ask (its
   * served tokens go with it), or undefined when one is on its way or was refused.
   */
  askRefill(): Refill | undefined {
    if (this.refill !== undefined) return undefined;
    const ask: Refill = { asking: true, tokens: this.served };
    this.refill = ask;
    this.served = [];
    return ask;
  }

  /** The refill's reply: the floor it reports (undefined: stale or refused, nothing learned). */
  refilled(ask: Refill, result: PassOnResult, sentAt: number): Floor | undefined {
    // Asked again since (a release kept the key meanwhile, with a later block): this one is stale.
    if (this.refill !== ask) return undefined;
    if (!result.kept) return void (this.refill = 'refused');
    const fence = BigInt(result.kept.fence);
    // Tokens only ever increase: a block below the current one is never used.
    this.refill = fence > this.last ? { fence, last: BigInt(result.kept.last), until: sentAt + result.kept.px } : undefined;
    return result.kept.floor;
  }

  /** The refill failed: the block's end goes to Redis as usual. */
  refillFailed(ask: Refill): void {
    if (this.refill === ask) this.refill = 'refused';
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
