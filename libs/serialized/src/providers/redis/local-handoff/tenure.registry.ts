import { performance } from 'node:perf_hooks';
import type { HandOffMode } from '../../../acquire-options.interface';
import type { RedisLock } from '../holding/redis.lock';
import { refill, type Redis } from '../protocol/redis.commands';
import { Floor } from '../protocol/queue.floor';
import type { RedisLockKeys } from '../protocol/redis.keyspace';
import { Tenure } from './redis.tenure';

/** What the tenure registry reads of a waiter (waiting/redis.waiter.ts's `RedisWaiter`); it never changes it. */
export interface LocalWaiter {
  readonly token: string;
  readonly fence: number;
  readonly rider: boolean;
  readonly leaseMs: number;
  readonly handoff: HandOffMode | undefined;
  readonly signal: AbortSignal | undefined;
}

/** What a tenure (this process holding a key it got from Redis) learned when it began. */
export interface GrantBlock {
  /** The last fencing token reserved for this tenure (the holder's own: no local hand-offs). */
  readonly last: number;
  /** Queue place of the first waiter of another process. */
  readonly floor: Floor;
}

/** A decision: `waiter` is to hold the key in-process, under the tenure's `token`, with `fence` and `px` ms of lease from `since`. */
export interface Serve<W extends LocalWaiter> {
  readonly waiter: W;
  readonly keys: RedisLockKeys;
  readonly token: string;
  readonly fence: bigint;
  readonly px: number;
  readonly since: number;
}

/** A decision at a tenure's beginning or end: the places to leave, and whether the riders at the front take places of their own. */
export interface TenureChange {
  readonly leave?: { readonly keys: RedisLockKeys; readonly tokens: readonly string[] };
  readonly unride: boolean;
}

/**
 * Local hand-off (lock cohorting, Dice, Marathe & Shavit, PPoPP 2012): while this
 * process holds a key in Redis, a release may pass it to the process's own next
 * waiter without a round trip. The Redis owner stays the tenure's token (local
 * holders share it and renew it); every local holder gets the next token of the
 * block the tenure reserved with one `INCRBY`, so fencing tokens keep increasing
 * across local and Redis hand-offs, and the block's size bounds the consecutive
 * local hand-offs. In `strict` mode a waiter is served locally only while its
 * place is ahead of every waiter of another process known to be queued (the
 * floor): the scripts report it when the tenure begins and with each reply that
 * queues a waiter of this process behind its own holder, and a waiter of another
 * process that queues behind the holder tells it by a notice.
 *
 * Riders (see `admit`): while this process holds the key and knows of no waiter
 * of another process queued, a new waiter takes no place in Redis at all. When the
 * block runs out with riders waiting, the release keeps the key with a fresh block
 * for them. When the tenure ends any other way, the riders take places of their own.
 * See docs/semantics.md.
 *
 * This registry keeps this process's tenures (one per key it holds from Redis)
 * and decides every local hand-off on them; it creates no lock and settles no
 * waiter: the Redis backend (`RedisBackend`) carries its decisions out.
 */
export class TenureRegistry<W extends LocalWaiter> {
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
    private readonly redis: Redis,
    /** The provider is shutting down: nothing is handed on in-process. */
    private readonly closing: () => boolean,
  ) {}

  /**
   * A lock got from Redis under `token` at `fence`: a new tenure, with `block` the
   * tokens reserved for its local hand-offs (none: no tenure).
   */
  begin(key: string, keys: RedisLockKeys, token: string, fence: number, block: GrantBlock | undefined): TenureChange {
    // A tenure whose lock was lost and not yet released: its served waiters' places go now.
    const previous = this.tenures.get(key);
    const leave = previous ? { keys: previous.keys, tokens: previous.served } : undefined;
    const dropped = this.drop(key);
    // The block's size is the granting script's caller's setting: this process uses no more of it than its own allows.
    const last = block ? Math.min(block.last, fence + this.maxLocalHandOffs) : fence;
    if (block && last > fence) {
      this.tenures.set(key, new Tenure(key, token, keys, BigInt(fence), BigInt(last), block.floor));
      this.tenureKeys.set(token, key);
      return { leave, unride: dropped };
    }
    // No tenure to serve them: the riders that rode on the granted waiter's place take places of their own.
    return { leave, unride: true };
  }

  /** A reply says `floor` is the place of the first waiter of another process ahead of this key's waiters. */
  learned(key: string, floor: Floor): void {
    const tenure = this.tenures.get(key);
    if (tenure && floor !== Floor.UNKNOWN) tenure.lowerFloor(floor);
  }

  /** A waiter of another process queued at `place` behind the holder `owner` (a notice): the key, if `owner` is a tenure's. */
  noticed(owner: string, place: number): string | undefined {
    const key = this.tenureKeys.get(owner);
    if (key !== undefined) this.learned(key, place);
    return key;
  }

  /** The floor of `key`'s tenure (`Floor.NONE` without one): a place of another process's waiter, when it is one. */
  floorOf(key: string): Floor {
    return this.tenures.get(key)?.floor ?? Floor.NONE;
  }

  /** Local hand-off is on (`maxLocalHandOffs` > 0): without it nobody rides. */
  get on(): boolean {
    return this.maxLocalHandOffs > 0;
  }

  /** A new waiter of `key` may ride on this process's tenure: no waiter of another process known to be queued. */
  mayRide(key: string): boolean {
    return this.tenures.get(key)?.floor === Floor.NONE;
  }

  /**
   * `lock` is being released with a fresh lease: whom to pass it to in-process
   * (`first`: this process's first waiter of the key), if the mode and the block
   * allow. Undefined: release it to Redis.
   */
  passOn(lock: RedisLock, first: W | undefined): Serve<W> | undefined {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token || this.closing()) return undefined;
    const spent = lock.fencingToken >= tenure.last;
    if (spent && !tenure.ready) return undefined;
    const waiter = this.next(lock, tenure, first);
    if (!waiter) return undefined;
    // The block is spent: the next one, reserved meanwhile, if it is above every token issued.
    const next = spent ? tenure.takeRefill() : undefined;
    if (spent && !next) return undefined;
    // The tenure's owner token and its lease as it stands (or as the refill left it);
    // the new holder renews it on its own schedule (and its signal aborts if Redis no longer has it).
    const now = performance.now();
    const px = Math.max(lock.leaseLeft(), next ? next.until - now : 0);
    return this.serve(lock.key, tenure, waiter, next ? next.fence : lock.fencingToken + 1n, px, now);
  }

  /**
   * The local waiter `lock`'s release may pass the key to: the first, unless the
   * releasing holder's mode (per call, else the provider's) is strict and it has a
   * place behind a waiter of another process. A rider is served where it joined.
   */
  private next(lock: RedisLock, tenure: Tenure, waiter: W | undefined): W | undefined {
    if (!waiter || waiter.signal?.aborted) return undefined;
    // Ahead of every waiter of another process: a rider (it joined while none was known, or rides
    // behind a place none was known to be queued behind), or a place before the first of them.
    if (waiter.rider || waiter.fence < tenure.floor) return waiter;
    // Cohort: also a place behind one, until `maxLocalHandOffs` were served while a waiter of
    // another process was known to be queued (the riders behind such a place go with it).
    return (lock.handoff ?? this.mode) === 'cohort' && tenure.ahead < this.maxLocalHandOffs ? waiter : undefined;
  }

  /**
   * `lock` is released with a fresh lease and its block spent while riders wait
   * (`riders`: how many of the key's waiters ride): the lease (ms) to keep the key
   * for with a fresh block (release.lua `keep`), so that they are served where they
   * joined; 0: release as usual (no rider, or the next local waiter may not be
   * served: the riders then take places of their own). Riders join only while no
   * waiter of another process is known, and the reply to a keep says whether one
   * is: see docs/semantics.md for the bound. Never with replica acknowledgements on.
   */
  keepFor(lock: RedisLock, first: W | undefined, riders: number): number {
    const tenure = this.tenures.get(lock.key);
    // With replica acknowledgements on, a block's tokens count only once replicas have
    // them: a kept or refilled block would be served before they could say so, so the
    // key goes back to Redis instead and every new block comes with a confirmed grant.
    if (!tenure || tenure.token !== lock.token || this.closing() || riders === 0 || this.redis.replicas) return 0;
    return this.next(lock, tenure, first)?.leaseMs ?? 0;
  }

  /** The release with `keep` is on its way: the served waiters' places it removes (the tenure goes on meanwhile). */
  keeping(lock: RedisLock): readonly string[] {
    return this.tenures.get(lock.key)!.takeServed();
  }

  /**
   * The release with `keep` kept the key (`fence`..`last`, `px` ms from `since`):
   * whom to serve (`first`, when it may be), or undefined: nobody left to serve here
   * (they gave up on the way, or the next has to wait behind another process), so
   * the kept key goes back to Redis.
   */
  kept(
    lock: RedisLock,
    kept: { fence: number; last: number; px: number; floor: Floor },
    since: number,
    first: W | undefined,
  ): Serve<W> | undefined {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token) return undefined;
    tenure.kept(BigInt(kept.last));
    this.learned(lock.key, kept.floor);
    const waiter = this.closing() ? undefined : this.next(lock, tenure, first);
    return waiter && this.serve(lock.key, tenure, waiter, BigInt(kept.fence), kept.px, since);
  }

  /** The tenure ends (its lock goes back to Redis): the served waiters' places to remove. */
  end(lock: RedisLock): { served: readonly string[]; unride: boolean } {
    const tenure = this.tenures.get(lock.key);
    if (!tenure || tenure.token !== lock.token) return { served: [], unride: false };
    this.drop(lock.key);
    return { served: tenure.served, unride: true };
  }

  /** The release with `keep` did not keep the key (or failed): the tenure is over. True: its riders take places of their own. */
  ended(lock: RedisLock): boolean {
    return this.tenures.get(lock.key)?.token === lock.token && this.drop(lock.key);
  }

  private serve(key: string, tenure: Tenure, waiter: W, fence: bigint, px: number, since: number): Serve<W> {
    this.handOffs++;
    if (!waiter.rider) this.served.set(waiter.token, { key, keys: tenure.keys });
    tenure.handedOn(fence, waiter.rider ? undefined : waiter.token);
    return { waiter, keys: tenure.keys, token: tenure.token, fence, px, since };
  }

  /**
   * A waiter was served in-process: when riders wait beyond the block (`riders`,
   * of which `frontRiders(n)` ride at the front), the next block is reserved now,
   * so that the hand-off at the block's end needs no round trip.
   */
  afterServe(key: string, fence: bigint, leaseMs: number, riders: number, frontRiders: (limit: number) => number): void {
    const tenure = this.tenures.get(key);
    // No block ahead of its grant with replica acknowledgements on (see `keepFor`).
    if (!tenure || this.redis.replicas) return;
    const left = Number(tenure.last - fence);
    if (riders <= left || frontRiders(left + 1) <= left) return;
    const served = tenure.askRefill();
    if (!served) return;
    refill(this.redis, key, tenure.keys, tenure.token, served.tokens, leaseMs, fence).then(
      ({ reply, sentAt }) => {
        this.forget(served.tokens);
        const floor = tenure.refilled(served, reply, sentAt);
        if (floor !== undefined) this.learned(key, floor);
      },
      () => {
        // Their places lapse with their heart-beats; the block's end goes to Redis as usual.
        this.forget(served.tokens);
        tenure.refillFailed(served);
      },
    );
  }

  /** The key's tenure is over. True when there was one (its riders take places of their own). */
  private drop(key: string): boolean {
    const tenure = this.tenures.get(key);
    if (!tenure) return false;
    this.tenures.delete(key);
    this.tenureKeys.delete(tenure.token);
    return true;
  }

  /** The release that removed the served waiters' places was answered (or failed: they lapse with their heart-beats). */
  forget(served: readonly string[]): void {
    for (const token of served) this.served.delete(token);
  }

  /**
   * A script handed the key to `member`. A waiter already served in-process has
   * nothing waiting for it (our own lease ran out meanwhile): where to leave from.
   */
  servedOf(member: string): { key: string; keys: RedisLockKeys } | undefined {
    return this.served.get(member);
  }
}
