import type { LockLostError } from './errors/lock-lost.error';

/**
 * A held lock. Obtained from {@link LockProvider.acquire} / `tryAcquire`, or handed
 * to the callback of `LockService.run`.
 */
export interface Lock {
  /** The key as passed to `acquire` (the provider adds its `keyPrefix` namespace). */
  readonly key: string;
  /**
   * Strictly increases for successive holders of this key, across every process
   * sharing the backend. Store it with your writes and reject a write that carries
   * a smaller token than one already stored: a paused holder's late write then
   * cannot overwrite its successor's.
   */
  readonly fencingToken: bigint;
  /** Aborts, with a `LockLostError` as its reason, when the lock is lost while held. */
  readonly signal: AbortSignal;
  /**
   * The `LockLostError` that aborted (or will abort) `signal` if the lock was lost
   * while held, otherwise `undefined`. Unlike `signal.aborted`, reading it never
   * makes an AbortController, so `LockService` checks it at every release.
   */
  readonly lost: LockLostError | undefined;
  /**
   * Pushes the lease end to `ms` (default: the lock's lease) from now. Rejects with
   * `LockLostError` when the lock is no longer ours. Held locks renew themselves;
   * call this only to ask for a longer lease.
   */
  extend(ms?: number): Promise<void>;
  /** Releases the lock. Idempotent; never releases a lock someone else now holds. */
  release(): Promise<void>;
}
