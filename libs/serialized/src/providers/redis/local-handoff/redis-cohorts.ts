import { Floor } from '../protocol/floor';
import { performance } from 'node:perf_hooks';
import type { HandOffMode } from '../../../acquire-options.interface';
import type { HeldLocks } from '../../../internal/held-locks';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import { RedisLock, type RedisLockContext } from '../holding/redis-lock';
import { Tenure } from './redis-tenure';
import type { RedisWaiter } from '../waiting/redis-waiter';

/**
 * How a held key passes to the next waiter: `strict` (default) keeps global
 * arrival order — a local hand-off only to a waiter that reached Redis before any
 * waiter of another process still queued; `cohort` lets a process serve its own
 * waiters first, up to `maxLocalHandOffs` in a row, before the key goes back to
 * Redis (and to an earlier waiter of another process).
 */

/** What a tenure (this process holding a key it got from Redis) learned when it began. */
export interface GrantBlock {
  /** The last fencing token reserved for this tenure (the holder's own: no local hand-offs). */
  readonly last: number;
  /** Queue place of the first waiter of another process. */
  readonly floor: Floor;
}

/** What the cohorts need from the waiter state machine (which is also the context of its locks). */
export interface CohortHost extends RedisLockContext {
  /** The waiter is done waiting (it then resolves or rejects). */
  settle(waiter: RedisWaiter): void;
  /** Gives up `token`'s place, or passes the key on if `token` holds it. */
  leave(key: string, keys: RedisLockKeys, token: string): void;
  /** The riders at the front of `key`'s waiters (no place in Redis) take places of their own: the tenure they rode on ended. */
  unride(key: string): void;
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
 * that queues a waiter of this process behind its own holder, and a waiter of
 * another process that queues behind the holder tells it by a message.
 *
 * Riders: while this process holds the key and knows of no waiter of another
 * process queued (or rides behind a place of its own, see {@link RedisRiders}),
 * a new waiter takes no place in Redis at all: it waits in this process
 * and is served by a local hand-off. When the block runs out with riders waiting,
 * the release keeps the key with a fresh block for them (and learns whether a
 * waiter of another process is queued, in case its notice was lost). When the
 * tenure ends any other way, the riders take places of their own. See
 * docs/semantics.md.
 */
export class RedisCohorts {
  private readonly tenures = new Map<string, Tenure>();
  /** Key of each tenure, by its owner token (where a remote waiter's notice finds it). */
  private readonly tenureKeys = new Map<string, string>();
  /** Served owner tokens until the release that removes their places is answered: a late hand-off to one is passed on. */
  private readonly served = new Map<string, { key: string; keys: RedisLockKeys }>();
  /** Local hand-offs so far (diagnostics). */
  handOffs = 0;

  constructor(
    private readonly mode: HandOffMode,
    /** Cohort mode: local hand-offs in a row while a waiter of another process is known to be queued. */
    private readonly maxLocalHandOffs: number,
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
    block?: GrantBlock, handoff?: HandOffMode,
  ): RedisLock {
    // A tenure whose lock was lost and not yet released: its served waiters' places go now.
    const previous = this.tenures.get(key);
    if (previous) for (const served of previous.served) this.host.leave(key, previous.keys, served);
    this.drop(key);
    // The block's size is the granting script's caller's setting: this process uses no more of it than its own allows.
    const last = block ? Math.min(block.last, fence + this.maxLocalHandOffs) : fence;
    if (block && last > fence) {
      this.tenures.set(key, new Tenure(key, token, keys, BigInt(fence), BigInt(last), block.floor));
      this.tenureKeys.set(token, key);
    } else {
      // No tenure to serve them: the riders that rode on the granted waiter's place take places of their own.
      this.host.unride(key);
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
  learned(key: string, floor: Floor): void {
    const tenure = this.tenures.get(key);
    if (tenure && floor !== Floor.UNKNOWN && floor < tenure.floor) tenure.floor = floor;
  }

  /** A waiter of another process queued at `place` behind the holder `owner` (a message on this process's channel): the key, if `owner` is a tenure's. */
  noticed(owner: string, place: number): string | undefined {
    const key = this.tenureKeys.get(owner);
    if (key !== undefined) this.learned(key, place);
    return key;
  }

  /** Local hand-off is on (`maxLocalHandOffs` > 0): without it nobody rides. */
  get on(): boolean {
    return this.maxLocalHandOffs > 0;
  }

  /**
   * A new waiter of a key this process holds may ride on the tenure (no place in
   * Redis): see the class comment. The caller has checked local arrival order.
   */
  mayRide(waiter: RedisWaiter): boolean {
    // No waiter of another process known to be queued.
    return this.tenures.get(waiter.queue.key)?.floor === Floor.NONE;
  }

  /**
   * `lock` is being released with a fresh lease: passes it to this process's next
   * waiter if the mode and the block allow. False: release it to Redis.
   */
  passOn(lock: RedisLock): boolean {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token || this.held.closing) return false;
    const spent = lock.fencingToken >= tenure.last;
    if (spent && !tenure.ready) return false;
    const waiter = this.next(lock, tenure);
    if (!waiter) return false;
    // The block is spent: the next one, reserved meanwhile, if it is above every token issued.
    const refill = spent ? tenure.takeRefill() : undefined;
    if (spent && !refill) return false;
    this.held.delete(lock);
    // The tenure's owner token and its lease as it stands (or as the refill left it);
    // the new holder renews it on its own schedule (and its signal aborts if Redis no longer has it).
    const now = performance.now();
    const px = Math.max(lock.leaseLeft(), refill ? refill.until - now : 0);
    this.serve(lock.key, tenure, waiter, refill ? refill.fence : lock.fencingToken + 1n, px, now);
    return true;
  }

  /**
   * The local waiter `lock`'s release may pass the key to: the first, unless the
   * releasing holder's mode (per call, else the provider's) is strict and it has a
   * place behind a waiter of another process. A rider is served where it joined.
   */
  private next(lock: RedisLock, tenure: Tenure): RedisWaiter | undefined {
    const waiter = this.firstQueued(lock.key);
    if (!waiter || waiter.signal?.aborted) return undefined;
    // Ahead of every waiter of another process: a rider (it joined while none was known, or rides
    // behind a place none was known to be queued behind), or a place before the first of them.
    if (waiter.rider || waiter.fence < tenure.floor) return waiter;
    // Cohort: also a place behind one, until `maxLocalHandOffs` were served while a waiter of
    // another process was known to be queued (the riders behind such a place go with it).
    return (lock.handoff ?? this.mode) === 'cohort' && tenure.ahead < this.maxLocalHandOffs ? waiter : undefined;
  }

  /**
   * `lock` is released with a fresh lease and its block spent while riders wait:
   * the lease (ms) to keep the key for with a fresh block (release.lua `keep`), so
   * that they are served where they joined; 0: release as usual (no rider, or the
   * next local waiter may not be served: the riders then take places of their own).
   * Riders join only while no waiter of another process is known, and the reply to
   * a keep says whether one is: see docs/semantics.md for the bound.
   */
  keepFor(lock: RedisLock): number {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token || this.held.closing || !this.hasRiders(lock.key)) return 0;
    return this.next(lock, tenure)?.leaseMs ?? 0;
  }

  /** The release with `keep` is on its way: the served waiters' places it removes (the tenure goes on meanwhile). */
  keeping(lock: RedisLock): readonly string[] {
    const tenure = this.tenures.get(lock.key)!;
    const served = tenure.served;
    tenure.served = [];
    return served;
  }

  /** The release with `keep` kept the key (`fence`..`last`, `px` ms from `since`): the next local waiter holds it. */
  kept(lock: RedisLock, keys: RedisLockKeys, { fence, last, px, floor }: { fence: number; last: number; px: number; floor: Floor }, since: number): void {
    const tenure = this.tenures.get(lock.key);
    if (tenure && tenure.token === lock.token) {
      tenure.kept(BigInt(last));
      this.learned(lock.key, floor);
      const waiter = this.held.closing ? undefined : this.next(lock, tenure);
      if (waiter) return this.serve(lock.key, tenure, waiter, BigInt(fence), px, since);
    }
    // Nobody left to serve here (they gave up on the way, or the next has to wait behind another process): back to Redis.
    const idle = new RedisLock(this.host, lock.key, keys, lock.token, BigInt(fence), px, px, since);
    idle.release().catch(() => undefined);
  }

  /** The tenure ends (its lock goes back to Redis): the served waiters' places to remove. */
  end(lock: RedisLock): readonly string[] {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token) return [];
    this.drop(lock.key);
    return tenure.served;
  }

  /** The release with `keep` did not keep the key (or failed): the tenure is over. */
  ended(lock: RedisLock): void {
    if (this.tenures.get(lock.key)?.token === lock.token) this.drop(lock.key);
  }

  private serve(key: string, tenure: Tenure, waiter: RedisWaiter, fence: bigint, px: number, since: number): void {
    this.handOffs++;
    if (tenure.floor !== Floor.NONE) tenure.ahead++;
    if (!waiter.rider) {
      tenure.served.push(waiter.token);
      this.served.set(waiter.token, { key, keys: tenure.keys });
    }
    tenure.issued = fence;
    const next = new RedisLock(this.host, key, tenure.keys, tenure.token, fence, waiter.leaseMs, px, since);
    next.handoff = waiter.handoff;
    this.held.add(next);
    waiter.granted = true;
    this.host.settle(waiter);
    waiter.resolve(next);
    const left = Number(tenure.last - fence);
    if (waiter.queue.riders > left && waiter.queue.frontRiders(left + 1) > left) {
      tenure.askRefill(this.host.connection, this.host.scripts, waiter.leaseMs, (floor) => this.learned(key, floor), (s) => this.forget(s));
    }
  }

  private hasRiders(key: string): boolean {
    return (this.firstQueued(key)?.queue.riders ?? 0) > 0;
  }

  /** The key's tenure is over: its riders take places of their own. */
  private drop(key: string): void {
    const tenure = this.tenures.get(key);
    if (!tenure) return;
    this.tenures.delete(key);
    this.tenureKeys.delete(tenure.token);
    this.host.unride(key);
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
