import type { Deadline } from '../../../internal/deadline-queue';
import type { RedisLockKeys } from '../protocol/redis-keyspace';

/** What the key's list needs of a waiter: its owner token and its links. */
export interface LinkedWaiter<W extends LinkedWaiter<W>> {
  readonly token: string;
  /** Linked without a place in Redis (a rider). */
  rider: boolean;
  /** A rider's waiter with a place it joined behind (undefined: it joined this process's tenure). */
  anchor: W | undefined;
  prev: W | undefined;
  next: W | undefined;
}

/**
 * This process's waiters of one key: the first level of the two. Every waiter has
 * its own place in the Redis queue (global arrival order), or rides without one
 * (`RedisCohorts.ride`) on this process's tenure of the key (the riders at the front)
 * or on the place of the waiter right before it (a run of riders behind that
 * waiter, served when it gets the key), but the process talks
 * about the key with one voice: one heart-beat for all of them, one
 * wake-up at the holder's lease end. Exists only while someone of this process
 * waits for the key.
 */
export class RedisKeyWaiters<W extends LinkedWaiter<W>> {
  /** Waiters sending or queued: what `maxPending` bounds. */
  pending = 0;
  /** Waiters linked (with a place in the Redis queue, or riders), in arrival order. */
  queued = 0;
  /** Of those, riders: no place in Redis (see `RedisCohorts.ride`). */
  riders = 0;
  /** Waiters (not linked) waiting for the reply to `leader`'s enqueue call before they ride or queue. */
  following = 0;
  /** The waiter whose enqueue call went out last (newcomers follow it while it is on its way). */
  leader: W | undefined;
  first: W | undefined;
  last: W | undefined;
  /** The next heart-beat. */
  heartbeat: Deadline | undefined;
  /** A heart-beat is on its way to Redis. */
  heartbeating = false;
  /** When a heart-beat asked for during another one should run. */
  heartbeatAgainAt = Infinity;

  constructor(
    readonly key: string,
    readonly keys: RedisLockKeys,
    private readonly heartbeats: { run(queue: RedisKeyWaiters<W>): void },
  ) {}

  readonly fireHeartbeat = (): void => {
    this.heartbeat = undefined;
    this.heartbeats.run(this);
  };

  link(waiter: W): void {
    waiter.prev = this.last;
    waiter.next = undefined;
    if (this.last) this.last.next = waiter;
    else this.first = waiter;
    this.last = waiter;
    this.queued++;
  }

  unlink(waiter: W): void {
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.first = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.last = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.queued--;
  }

  /**
   * Unlinks a run of riders, in arrival order: those right behind `after` (a waiter
   * with a place that is leaving without the key: they rode on that place), or with
   * `after` undefined those at the front (their tenure ended). They take places of
   * their own.
   */
  takeRun(after?: W): W[] {
    const riders: W[] = [];
    for (let w = after ? after.next : this.first; w && w.rider; w = w.next) riders.push(w);
    for (const w of riders) {
      this.unlink(w);
      w.rider = false;
    }
    this.riders -= riders.length;
    return riders;
  }

  /** Riders at the front (those a tenure serves before any waiter with a place), counted up to `limit`. */
  frontRiders(limit: number): number {
    let count = 0;
    for (let w = this.first; w && w.rider && count < limit; w = w.next) count++;
    return count;
  }

  /** Waiters with a place in the Redis queue. */
  get places(): number {
    return this.queued - this.riders;
  }

  /** Owner tokens of the waiters with a place in the Redis queue, in arrival order. */
  tokens(): string[] {
    const tokens: string[] = [];
    for (let w = this.first; w; w = w.next) if (!w.rider) tokens.push(w.token);
    return tokens;
  }
}
