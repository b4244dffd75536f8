import type { AcquireOptions, ProviderAcquireOptions } from './acquire-options.interface';
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
   * The synchronous fast path: `key`, held, when the provider can grant it with
   * no I/O and it is free (nobody holds or waits for it, the provider is open,
   * `signal` has not aborted); otherwise `undefined`, and the caller acquires it
   * with {@link acquire}, which then waits, rejects or reports the error. Never
   * throws. `LockService.run` tries it first, which spares an uncontended call
   * the promises of an acquisition. Only the in-memory provider grants anything
   * here; the default grants nothing.
   */
  acquireNow(_key: string, _options?: AcquireOptions): Lock | undefined {
    return undefined;
  }

  /**
   * {@link acquire} for a caller that has already validated `key` and `options`
   * (`LockService` does, once per call, at its boundary), so a call is validated
   * once: a provider that validates in `acquire` overrides this with `acquire`'s
   * work minus the validation. The default is `acquire` itself, so a provider that
   * overrides nothing behaves as before.
   */
  acquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock> {
    return this.acquire(key, options);
  }

  /** {@link tryAcquire} for a caller that has already validated `key` and `options` (see {@link acquireValidated}). */
  tryAcquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock | null> {
    return this.tryAcquire(key, options);
  }

  /** {@link acquireNow} for a caller that has already validated `key` and `options` (see {@link acquireValidated}). */
  acquireNowValidated(key: string, options: AcquireOptions): Lock | undefined {
    return this.acquireNow(key, options);
  }

  /**
   * Shuts the provider down outside Nest (Nest calls its shutdown hooks):
   * new acquisitions fail with `LockBackendError`, waiters are rejected, held
   * locks are released as their holders finish (up to a grace period), and the
   * connections the provider opened are closed (not the ones passed in).
   */
  abstract close(): Promise<void>;
}
