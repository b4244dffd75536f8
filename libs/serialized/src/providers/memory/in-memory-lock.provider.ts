import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { AcquireOptions, ProviderAcquireOptions } from '../../acquire-options.interface';
import { validateAcquire } from '../../config/acquire-options.validator';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../errors';
import { DeadlineQueue } from '../../internal/deadline-queue';
import { HeldLocks } from '../../internal/held-locks';
import { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import { KeyedWaitQueue, type WaitErrors } from '../../internal/keyed-wait-queue';
import { PendingBudget } from '../../internal/pending-budget';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { InMemoryLock } from './in-memory-lock';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { MemoryIdempotencyStore } from '../../idempotency/stores/memory-idempotency.store';

/** Options of {@link InMemoryLockProvider}; module options fill them in (no key prefix, lease or connection here). */
export type InMemoryLockProviderOptions = Pick<
  LockProviderCommonOptions,
  'waitTimeoutMs' | 'maxPending' | 'maxPendingTotal' | 'shutdownGraceMs' | 'leaseMs'
>;

/** How an in-memory waiter fails; shared, so waiting allocates no error closures. */
const WAIT_ERRORS: WaitErrors = {
  timeoutError: (key, timeoutMs) => new LockTimeoutError(key, timeoutMs),
  busyError: (key, maxPending) => new LockBusyError(key, 'max-pending', { maxPending }),
};

/**
 * Locks inside one process: a strict FIFO queue per key. Uncontended it costs a
 * Map entry and no timer; waiting costs a list node, which is also its deadline
 * (in its delay's line: O(1) in and out), its promise, and an abort listener only
 * with a signal; an idle key costs nothing. Leases are meaningless here (a holder cannot crash without the
 * whole process), so held locks never expire: `leaseMs` is accepted and ignored,
 * with one debug note per instance (docs/lease.md).
 */
export class InMemoryLockProvider
  extends LockProvider
  implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource
{
  private readonly deadlines = new DeadlineQueue();
  private readonly queue: KeyedWaitQueue<InMemoryLock>;
  // Counted, not kept: nothing here visits held locks one by one, and each is released once (LockState).
  private readonly held = new HeldLocks<InMemoryLock>(false, false);
  private lastToken = 0;
  private readonly leaseNote = new IgnoredLeaseNote(
    new Logger(SERIALIZED_LOGGER_CONTEXT),
    'InMemoryLockProvider',
    'an in-memory lock has no lease; it is held until released (its holder cannot crash without the whole process)',
  );
  private readonly waitTimeoutMs: number;
  private readonly maxPending: number;
  private readonly shutdownGraceMs: number;
  private readonly onRelease = (lock: InMemoryLock): void => {
    // The next holder (if any) is counted before this one leaves: a drain never sees a handed-over key as idle.
    this.queue.release(lock.key);
    this.held.delete(lock);
  };

  constructor(options: InMemoryLockProviderOptions = {}) {
    super();
    this.waitTimeoutMs = options.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.maxPending = options.maxPending ?? SERIALIZED_DEFAULTS.maxPending;
    this.shutdownGraceMs = options.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs;
    this.queue = new KeyedWaitQueue(this.deadlines, new PendingBudget(options.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal), (key) =>
      this.grant(key),
    );
  }

  /** `@Idempotent`'s records, in this process like the locks. */
  createIdempotencyStore(): IdempotencyStore {
    return new MemoryIdempotencyStore();
  }

  /** Diagnostics (for tests and health checks): keys held or waited for right now (0 when idle). */
  get activeKeys(): number {
    return this.queue.size;
  }

  /** Diagnostics: whether a timer is armed (none when nobody waits). */
  get timerArmed(): boolean {
    return this.deadlines.armed;
  }

  /**
   * Not an `async` function: a free key costs one settled promise, and a waiter's
   * promise is the queue's own, resolved with its lock at the hand-off (no
   * continuation here between the release and the caller).
   */
  acquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock> {
    const invalid = validateAcquire(key, options, 'InMemoryLockProvider#acquire');
    if (invalid) return Promise.reject(invalid);
    return this.acquireValidated(key, options);
  }

  /** `acquire` once `key` and `options` are known valid (`LockService` validated them). */
  override acquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock> {
    this.leaseNote.check(options.leaseMs, key);
    if (this.held.closing) return Promise.reject(LockBackendError.shuttingDown(key));
    const signal = options.signal;
    const waiting = this.queue.wait(key, options.waitTimeoutMs ?? this.waitTimeoutMs, options.maxPending ?? this.maxPending, signal, WAIT_ERRORS);
    if (!waiting) return Promise.resolve(this.grant(key));
    if (!signal) return waiting;
    return waiting.then((lock) => {
      // Handed over in the same tick the caller gave up: pass it on, never run.
      if (signal.aborted) {
        lock.releaseNow();
        throw signal.reason;
      }
      return lock;
    });
  }

  async tryAcquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock | null> {
    const invalid = validateAcquire(key, options, 'InMemoryLockProvider#tryAcquire');
    if (invalid) throw invalid;
    return this.tryAcquireValidated(key, options);
  }

  /** `tryAcquire` once `key` and `options` are known valid (`LockService` validated them). */
  override async tryAcquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock | null> {
    this.leaseNote.check(options.leaseMs, key);
    this.held.assertOpen(key);
    if (options.signal?.aborted) throw options.signal.reason;
    return this.queue.tryTake(key) ? this.grant(key) : null;
  }

  /** The key at once when it is free; anything else goes through `acquire` (see {@link LockProvider.acquireNow}). */
  override acquireNow(key: string, options?: AcquireOptions): InMemoryLock | undefined {
    // Anything unusual (a bad key or option, an aborted signal, shutdown) is left to `acquire` and its errors.
    // A held key is the common miss: it is answered before the (costlier) checks.
    if (this.held.closing || this.queue.isHeld(key)) return undefined;
    if (validateAcquire(key, options, 'InMemoryLockProvider#acquireNow')) return undefined;
    return this.acquireNowValidated(key, options);
  }

  /** `acquireNow` once `key` and `options` are known valid (`LockService` validated them). */
  override acquireNowValidated(key: string, options?: AcquireOptions): InMemoryLock | undefined {
    if (this.held.closing || this.queue.isHeld(key) || options?.signal?.aborted) return undefined;
    this.leaseNote.check(options?.leaseMs, key);
    // Still free: nothing since isHeld could take it (the note above only logs, and only once with a leaseMs).
    this.queue.takeFree(key);
    return this.grant(key);
  }

  async beforeApplicationShutdown(): Promise<void> {
    // A lock still held when the grace period ends stays held and its signal does
    // not abort: an in-memory lock is never renewed nor watched, so nothing stops
    // (unlike Redis and PostgreSQL, which abort it then), and nobody can take the
    // key from its holder.
    this.held.close();
    this.queue.rejectAll((key) => LockBackendError.shuttingDown(key));
    await this.held.drain(this.shutdownGraceMs);
  }

  onApplicationShutdown(): void {
    this.deadlines.clear();
  }

  /** Shuts down outside Nest: rejects waiters, waits for holders (grace period), clears timers. */
  async close(): Promise<void> {
    await this.beforeApplicationShutdown();
    this.onApplicationShutdown();
  }

  private grant(key: string): InMemoryLock {
    const lock = new InMemoryLock(key, ++this.lastToken, this.onRelease);
    this.held.add(lock);
    return lock;
  }
}
