import type { Deadline } from '../../internal/deadline-queue';
import type { RedisLockKeys } from './redis-keyspace';
import type { RedisWaiter } from './redis-waiter';

/**
 * This process's waiters of one key: the first level of the two. Every waiter has
 * its own place in the Redis queue (global arrival order), but the process talks
 * about the key with one voice: one heart-beat / safety check for all of them, one
 * wake-up at the holder's lease end. Exists only while someone of this process
 * waits for the key.
 */
export class RedisKeyWaiters {
  /** Waiters sending or queued: what `maxPending` bounds. */
  pending = 0;
  /** Waiters with a place in the Redis queue, in arrival order. */
  queued = 0;
  first: RedisWaiter | undefined;
  last: RedisWaiter | undefined;
  /** The next heart-beat / safety check. */
  check: Deadline | undefined;
  /** A check is on its way to Redis. */
  checking = false;
  /** When a check asked for during another one should run. */
  recheckAt = Infinity;

  constructor(
    readonly key: string,
    readonly keys: RedisLockKeys,
    readonly runCheck: (queue: RedisKeyWaiters) => void,
  ) {}

  readonly fireCheck = (): void => {
    this.check = undefined;
    this.runCheck(this);
  };

  link(waiter: RedisWaiter): void {
    waiter.prev = this.last;
    waiter.next = undefined;
    if (this.last) this.last.next = waiter;
    else this.first = waiter;
    this.last = waiter;
    this.queued++;
  }

  unlink(waiter: RedisWaiter): void {
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.first = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.last = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.queued--;
  }

  /** Owner tokens of the queued waiters, in arrival order. */
  tokens(): string[] {
    const tokens: string[] = [];
    for (let w = this.first; w; w = w.next) tokens.push(w.token);
    return tokens;
  }
}
