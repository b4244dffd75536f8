/** Per-acquisition options; every field falls back to the module's options. */
export interface AcquireOptions {
  /** How long to wait for a busy key before `LockTimeoutError` (default 10 000 ms). */
  waitTimeoutMs?: number;
  /** Lease of the lock; renewed automatically while held (default 30 000 ms). */
  leaseMs?: number;
  /** Aborting it makes a waiter leave the queue at once (the acquire rejects with the signal's reason). */
  signal?: AbortSignal;
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
