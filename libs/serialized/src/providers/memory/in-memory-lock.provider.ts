import { validateProviderOptions } from '../../config/provider-options.validator';
import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { MemoryIdempotencyStore } from '../../idempotency/stores/memory-idempotency.store';
import { performance } from 'node:perf_hooks';
import { holderHere } from '../../inspect/holder.here';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import { LayeredLockProvider } from '../../local/layered-lock.provider';
import { LockLines } from '../../local/lock.lines';
import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import { InMemoryBackend } from './in-memory.backend';
import type { InMemoryLock } from './in-memory.lock';

/** Options of {@link InMemoryLockProvider}; module options fill them in (no key prefix, lease or connection here). */
export type InMemoryLockProviderOptions = Pick<
  LockProviderCommonOptions,
  'waitTimeoutMs' | 'maxPending' | 'maxPendingTotal' | 'shutdownGraceMs' | 'leaseMs'
>;

/**
 * Locks inside one process: the local layer alone, a strict FIFO line per key.
 * Uncontended it costs a Map entry and no timer; waiting costs a list node, which
 * is also its deadline (O(1) in and out), its promise, and an abort listener only
 * with a signal; an idle key costs nothing. Leases are meaningless here (a holder
 * cannot crash without the whole process), so held locks never expire: `leaseMs`
 * is accepted and ignored, with one debug note per instance (docs/lease.md).
 */
export class InMemoryLockProvider
  extends LayeredLockProvider
  implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource
{
  /** @internal */
  readonly lines: LockLines<InMemoryLock>;
  /** `LockService.inspect`: this process is the whole picture (O(1), nothing changed). @internal */
  readonly inspector: KeyInspector = {
    inspect: (key) => {
      const { holder, waiting, others = [], shared } = this.lines.inspectHere(key);
      const now = performance.now();
      const holders = holder ? [holder, ...others].map((lock) => holderHere(lock, now, shared ? { shared } : undefined)) : [];
      return Promise.resolve({ key, holders, waiting, waitingHere: waiting });
    },
  };

  constructor(options: InMemoryLockProviderOptions = {}) {
    super('InMemoryLockProvider');
    validateProviderOptions('InMemoryLockProvider', options);
    const backend = new InMemoryBackend(
      { released: (lock) => this.lines.released(lock) },
      new Logger(SERIALIZED_LOGGER_CONTEXT),
      'InMemoryLockProvider',
    );
    this.lines = new LockLines<InMemoryLock>(backend, options);
  }

  /** `@Idempotent`'s records, in this process like the locks. */
  createIdempotencyStore(): IdempotencyStore {
    return new MemoryIdempotencyStore();
  }

  /** Diagnostics (for tests and health checks): keys held or waited for right now (0 when idle). */
  get activeKeys(): number {
    return this.lines.activeKeys;
  }

  /** Diagnostics: whether a timer is armed (none when nobody waits). */
  get timerArmed(): boolean {
    return this.lines.timerArmed;
  }

  /**
   * A lock still held when the grace period ends stays held and its signal does not
   * abort: an in-memory lock is never renewed nor watched, so nothing stops (unlike
   * Redis and PostgreSQL, which abort it then), and nobody can take the key from its holder.
   */
  protected closeBackend(): Promise<void> {
    this.lines.clearTimers();
    return Promise.resolve();
  }
}
