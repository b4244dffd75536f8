import type { Lock } from '../../lock.interface';
import type { LazyDeadline } from './lazy-deadline-queue';
import type { RedisKeyWaiters } from './redis-key-waiters';

/** Its enqueue call is on its way to Redis. */
export const SENDING = 0;
/** It has a place in the Redis queue. */
export const QUEUED = 1;
/** It holds the key, or gave up; nothing more happens to it. */
export const SETTLED = 2;

/** One caller waiting for a key in this process. */
export class RedisWaiter {
  phase: typeof SENDING | typeof QUEUED | typeof SETTLED = SENDING;
  /** Its place in the Redis queue, which becomes its fencing token. */
  fence = 0;
  /** Settled by being handed the key (not by giving up). */
  granted = false;
  prev: RedisWaiter | undefined;
  next: RedisWaiter | undefined;
  deadline: LazyDeadline | undefined;
  onAbort: (() => void) | undefined;
  readonly promise: Promise<Lock>;
  resolve!: (lock: Lock) => void;
  reject!: (error: unknown) => void;

  constructor(
    readonly queue: RedisKeyWaiters,
    readonly token: string,
    readonly leaseMs: number,
    readonly waitTimeoutMs: number,
    readonly signal: AbortSignal | undefined,
    readonly startedAt: number,
  ) {
    this.promise = new Promise<Lock>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}
