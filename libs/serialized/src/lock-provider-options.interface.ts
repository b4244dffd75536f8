/**
 * What every provider takes from the module's options (`SerializedModule.forRoot`
 * fills them in; defaults in `SERIALIZED_DEFAULTS`). Providers add their own
 * connection settings and tuning knobs.
 */
export interface LockProviderCommonOptions {
  /** Namespace of every lock key in the backend (default `serialized`). */
  keyPrefix?: string;
  /**
   * Lease of a held lock (default 30 000 ms). Its meaning differs per provider
   * (docs/lease.md): a lease renewed every third of it on Redis, the liveness
   * cadence of held sessions on PostgreSQL, nothing in memory.
   */
  leaseMs?: number;
  /** Longest wait for a busy key in `wait` mode before `LockTimeoutError` (default 10 000 ms). */
  waitTimeoutMs?: number;
  /** Most waiters per key in this process; beyond it `LockBusyError` (default 1000). */
  maxPending?: number;
  /**
   * Most waiters of this provider instance across all keys, beyond each key's
   * `maxPending`; beyond it `LockBusyError` at once (default 100 000). Bounds the
   * memory waiting can take (docs/memory.md).
   */
  maxPendingTotal?: number;
  /** Bound on reaching the backend before `LockBackendError` (default 3000 ms). */
  connectTimeoutMs?: number;
  /** How long shutdown (`app.close()`) waits for running holders to release their locks (default 10 000 ms). */
  shutdownGraceMs?: number;
}
