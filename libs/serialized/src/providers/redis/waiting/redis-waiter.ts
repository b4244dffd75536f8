import type { Lock } from '../../../lock.interface';
import type { HandOffMode } from '../../../acquire-options.interface';
import type { Deadline } from '../../../internal/deadline-queue';
import type { RedisCallOptions } from '../transport/redis-connection';
import type { LinkedWaiter, RedisKeyWaiters } from './redis-key-waiters';

/** One waiter's acquisition as asked for. */
export interface WaitRequest {
  readonly key: string;
  readonly leaseMs: number;
  readonly waitTimeoutMs: number;
  readonly maxPending: number;
  /** How this caller, once holding, passes the key on (default the provider's). */
  readonly handoff?: HandOffMode;
  readonly signal: AbortSignal | undefined;
}

/** This process's waiters of one key. */
export type KeyWaiters = RedisKeyWaiters<RedisWaiter>;

/** Its enqueue call waits to be sent (queued in this process) or for its reply. */
export const SENDING = 0;
/** It has a place in the Redis queue. */
export const QUEUED = 1;
/** It holds the key, or gave up; nothing more happens to it. */
export const SETTLED = 2;
/**
 * It was handed the key, but the hand-off may have run out before this process
 * could act on it (its event loop stalled, the news came late): Redis is asked
 * whether the key is still its own before it runs. It has no place in the queue.
 */
export const CONFIRMING = 3;

/**
 * One caller waiting for a key in this process. It is also the options of its
 * enqueue call: a call whose waiter gave up before it was sent is dropped unsent.
 */
export class RedisWaiter implements RedisCallOptions, LinkedWaiter<RedisWaiter> {
  phase: typeof SENDING | typeof QUEUED | typeof SETTLED | typeof CONFIRMING = SENDING;
  /** Its place in the Redis queue, which becomes its fencing token. */
  fence = 0;
  /** Most waiters of this process its call allows (`maxPending`): checked again when its reply shows it queued. */
  maxPending = Infinity;
  handoff: HandOffMode | undefined;
  /** It has no place in Redis: it waits for a local hand-off from this process's tenure (see `RedisCohorts.ride`). */
  rider = false;
  /** A rider's waiter with a place it rides behind (undefined: it rides on this process's tenure). */
  anchor: RedisWaiter | undefined = undefined;
  /** The waiter on its way to a place whose reply this one waits for (it then rides behind it, or queues). */
  following: RedisWaiter | undefined = undefined;
  /** Newcomers waiting for this one's reply, in arrival order. */
  followers: RedisWaiter[] | undefined = undefined;
  /**
   * Place of a waiter of another process queued behind it: told as the tail of the
   * queue (no rider may join its place from then on), or as the holder before this
   * process knew it held the key.
   */
  notice = Infinity;
  /** Settled by being handed the key (not by giving up). */
  granted = false;
  prev: RedisWaiter | undefined;
  next: RedisWaiter | undefined;
  deadline: Deadline | undefined;
  onAbort: (() => void) | undefined;
  readonly promise: Promise<Lock>;
  resolve!: (lock: Lock) => void;
  reject!: (error: unknown) => void;

  constructor(
    readonly queue: KeyWaiters,
    /** Its owner token; a waiter that lost an expired hand-off waits again under a new one. */
    public token: string,
    readonly leaseMs: number,
    readonly waitTimeoutMs: number,
    readonly signal: AbortSignal | undefined,
    /** When its wait budget started: the first turn of the event loop after the call (see `RedisWaiters.wait`). */
    public startedAt: number,
  ) {
    this.promise = new Promise<Lock>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** Asked by the connection just before the enqueue call is sent. */
  skip(): boolean {
    return this.phase === SETTLED;
  }
}
