import type { AcquireOptions } from './acquire-options.interface';
import type { Lock } from './lock.interface';

/**
 * The backend that hands out locks, and the DI token of the active one: inject
 * `LockProvider` to talk to it directly. `SerializedModule` registers the
 * in-memory, Redis or PostgreSQL implementation chosen by `driver`.
 *
 * Every implementation honours the same semantics (docs/semantics.md): mutual
 * exclusion per key, arrival order, wait timeouts, leases renewed while held,
 * strictly increasing fencing tokens, abortable waiting, fail-closed errors and
 * no state left for an idle key.
 */
export abstract class LockProvider {
  /**
   * Waits for `key` in arrival order and resolves with the held lock.
   * Rejects with `LockTimeoutError` after `waitTimeoutMs`, with the signal's reason
   * when `signal` aborts, with `LockBusyError` when `maxPending` callers already
   * wait in this process, and with `LockBackendError` when the backend cannot be
   * reached or the provider is shutting down.
   */
  abstract acquire(key: string, options?: AcquireOptions): Promise<Lock>;

  /**
   * Takes `key` only if it is free and nobody waits for it (it never jumps the
   * queue); resolves with `null` otherwise.
   */
  abstract tryAcquire(key: string, options?: AcquireOptions): Promise<Lock | null>;

  /**
   * Health check: resolves when the backend answers within `timeoutMs`, rejects
   * (with a `LockBackendError`) when it does not. Used by `SerializedHealthIndicator`.
   * The default resolves at once: a provider with no backend to reach (in-memory)
   * is up whenever its process is. Providers with a backend override it.
   */
  ping(timeoutMs: number): Promise<void> {
    void timeoutMs;
    return Promise.resolve();
  }

  /**
   * Shuts the provider down outside Nest (Nest calls its shutdown hooks):
   * new acquisitions fail with `LockBackendError`, waiters are rejected, held
   * locks are released as their holders finish (up to a grace period), and the
   * connections the provider opened are closed (not the ones passed in).
   */
  abstract close(): Promise<void>;
}
