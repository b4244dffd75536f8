/** Per-acquisition options; every field falls back to the module's options. */
export interface AcquireOptions {
  /** How long to wait for a busy key before `LockTimeoutError` (default 10 000 ms). */
  waitTimeoutMs?: number;
  /** Lease of the lock; renewed automatically while held (default 30 000 ms). */
  leaseMs?: number;
  /** Aborting it makes a waiter leave the queue at once (the acquire rejects with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Whether this holder, at release, may pass the key to the next caller of its
   * process without the backend (`'cohort'`, bounded) or only while no other process
   * waits for it ahead (`'strict'`); default the module's `postgres.handoff` /
   * `redis.handoff`. The in-memory provider ignores it. See docs/providers/postgres.md
   * and docs/providers/redis.md.
   */
  handoff?: HandOffMode;
  /**
   * Most holders of the key at once, this caller included: an integer 1–1000
   * (default 1, one holder at a time). Granted in arrival order; callers of one key
   * are meant to pass the same limit, and a mix never lets in more holders than
   * the smallest limit among the holders and the caller (docs/semantics.md,
   * "Several holders of one key"). Not with `shared`.
   */
  concurrency?: number;
  /**
   * Hold the key together with other `shared` callers (readers); a caller without
   * it holds the key alone (a writer). A shared caller that arrives behind a
   * waiting writer waits for it. Not with `concurrency` > 1.
   */
  shared?: boolean;
}

/**
 * What `LockService` passes to a provider besides the contract's {@link AcquireOptions}:
 * the `maxPending` bound is enforced by the provider, the only layer that knows which
 * callers wait and which one holds.
 */
export interface ProviderAcquireOptions extends AcquireOptions {
  /** Most callers that may wait for this key in this process (the holder does not count). */
  maxPending?: number;
}

/**
 * How a releasing holder passes a key on: `'strict'` hands it to a waiter of this
 * process only while no waiter of another process waits for it ahead; `'cohort'`
 * serves up to `maxLocalHandOffs` of this process's waiters in a row first.
 */
export type HandOffMode = 'strict' | 'cohort';

/** Every {@link HandOffMode}, for validation and the options table. */
export const HAND_OFF_MODES: readonly HandOffMode[] = ['strict', 'cohort'];
