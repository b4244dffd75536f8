import { performance } from 'node:perf_hooks';
import type { HandOffMode } from '../../acquire-options.interface';
import type { HeldLocks } from '../../internal/held-locks';
import type { RedisLockKeys } from './redis-keyspace';
import { RedisLock, type RedisLockContext } from './redis-lock';
import type { RedisWaiter } from './redis-waiter';

/**
 * How a held key passes to the next waiter: `strict` (default) keeps global
 * arrival order — a local hand-off only to a waiter that reached Redis before any
 * waiter of another process still queued; `cohort` lets a process serve its own
 * waiters first, up to `maxLocalHandOffs` in a row, before the key goes back to
 * Redis (and to an earlier waiter of another process).
 */
/** See {@link HandOffMode}. */
export type RedisHandOffMode = HandOffMode;

/** What a tenure (this process holding a key it got from Redis) learned when it began. */
export interface GrantBlock {
  /** The last fencing token reserved for this tenure (the holder's own: no local hand-offs). */
  readonly last: number;
  /** Queue place of the first waiter of another process (0: none; -1: unknown). */
  readonly floor: number;
}

/** What the cohorts need from the waiter state machine (which is also the context of its locks). */
export interface CohortHost extends RedisLockContext {
  /** The waiter is done waiting (it then resolves or rejects). */
  settle(waiter: RedisWaiter): void;
  /** Gives up `token`'s place, or passes the key on if `token` holds it. */
  leave(key: string, keys: RedisLockKeys, token: string): void;
}

/** One tenure: this process holds `key` in Redis under `token`. */
interface Tenure {
  readonly token: string;
  readonly keys: RedisLockKeys;
  /** The last fencing token of the block reserved when the tenure began. */
  readonly last: bigint;
  /** Queue place of the first waiter of another process known to be queued (Infinity: none). */
  floor: number;
  /** Owner tokens of the waiters served in-process (their places leave the queue at the release). */
  readonly served: string[];
}

/**
 * Local hand-off (lock cohorting, Dice, Marathe & Shavit, PPoPP 2012): while this
 * process holds a key in Redis, a release may pass it to the process's own next
 * waiter without a round trip. The Redis owner stays the tenure's token (local
 * holders share it and renew it); every local holder gets the next token of the
 * block the tenure reserved with one `INCRBY`, so fencing tokens keep increasing
 * across local and Redis hand-offs, and the block's size bounds the consecutive
 * local hand-offs. In `strict` mode a waiter is served locally only while its
 * place is ahead of every waiter of another process known to be queued: the
 * scripts report the first such place when the tenure begins and with each reply
 * that queues a waiter of this process behind its own holder. See docs/semantics.md.
 */
export class RedisCohorts {
  private readonly tenures = new Map<string, Tenure>();
  /** Served owner tokens until the release that removes their places is answered: a late hand-off to one is passed on. */
  private readonly served = new Map<string, { key: string; keys: RedisLockKeys }>();
  /** Local hand-offs so far (diagnostics). */
  handOffs = 0;

  constructor(
    private readonly mode: RedisHandOffMode,
    private readonly host: CohortHost,
    private readonly held: HeldLocks<RedisLock>,
    /** This process's first waiter of a key with a place in the Redis queue. */
    private readonly firstQueued: (key: string) => RedisWaiter | undefined,
  ) {}

  /**
   * A new lock got from Redis, held under `token` with `px` ms of lease from
   * `grantedAt`: a new tenure, with `block` the tokens reserved for its local hand-offs.
   */
  grant(
    key: string, keys: RedisLockKeys, token: string, fence: number, leaseMs: number, px: number, grantedAt: number,
    block?: GrantBlock, handoff?: RedisHandOffMode,
  ): RedisLock {
    // A tenure whose lock was lost and not yet released: its served waiters' places go now.
    const previous = this.tenures.get(key);
    if (previous) for (const served of previous.served) this.host.leave(key, previous.keys, served);
    this.tenures.delete(key);
    if (block && block.last > fence) {
      const floor = block.floor < 0 ? -Infinity : block.floor === 0 ? Infinity : block.floor;
      this.tenures.set(key, { token, keys, last: BigInt(block.last), floor, served: [] });
    }
    const lock = new RedisLock(this.host, key, keys, token, BigInt(fence), leaseMs, px, grantedAt);
    lock.handoff = handoff;
    this.held.add(lock);
    return lock;
  }

  /**
   * A reply queued a waiter of this process behind a holder of this process:
   * `floor` is the place of the first waiter of another process ahead of it.
   */
  learned(key: string, floor: number): void {
    const tenure = this.tenures.get(key);
    if (tenure && floor > 0 && floor < tenure.floor) tenure.floor = floor;
  }

  /**
   * `lock` is being released with a fresh lease: passes it to this process's next
   * waiter if the mode and the block allow. False: release it to Redis.
   */
  passOn(lock: RedisLock): boolean {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token || lock.fencingToken >= tenure.last || this.held.closing) return false;
    const waiter = this.firstQueued(lock.key);
    if (!waiter || waiter.signal?.aborted) return false;
    // The releasing holder's own choice (per call), else the provider's.
    if ((lock.handoff ?? this.mode) === 'strict' && !(waiter.fence < tenure.floor)) return false;
    this.handOffs++;
    tenure.served.push(waiter.token);
    this.served.set(waiter.token, { key: lock.key, keys: tenure.keys });
    this.held.delete(lock);
    // The tenure's owner token and its lease as it stands; the new holder renews it
    // on its own schedule (and its signal aborts if Redis no longer has it).
    const next = new RedisLock(this.host, lock.key, tenure.keys, lock.token, lock.fencingToken + 1n, waiter.leaseMs, lock.leaseLeft(), performance.now());
    next.handoff = waiter.handoff;
    this.held.add(next);
    this.host.settle(waiter);
    waiter.granted = true;
    waiter.resolve(next);
    return true;
  }

  /** The tenure ends (its lock goes back to Redis): the served waiters' places to remove. */
  end(lock: RedisLock): readonly string[] {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token) return [];
    this.tenures.delete(lock.key);
    return tenure.served;
  }

  /** The release that removed the served waiters' places was answered (or failed: they lapse with their heart-beats). */
  forget(served: readonly string[]): void {
    for (const token of served) this.served.delete(token);
  }

  /**
   * A script handed the key to `member`. A waiter already served in-process has
   * nothing waiting for it (our own lease ran out meanwhile): pass the key on.
   */
  handedToServed(member: string): boolean {
    const served = this.served.get(member);
    if (served === undefined) return false;
    this.host.leave(served.key, served.keys, member);
    return true;
  }
}
