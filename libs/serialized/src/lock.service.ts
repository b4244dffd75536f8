import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import type { AcquireOptions, ProviderAcquireOptions } from './acquire-options.interface';
import { LockBusyError, SerializationKeyError, SerializedError } from './errors';
import type { Lock } from './lock.interface';
import { LockProvider } from './lock.provider';
import { PEEK_SIGNAL, type LazySignal } from './internal/lazy-signal';
import { SERIALIZED_LOGGER_CONTEXT } from './serialized.constants';

/** How a caller waits: `wait` queues (up to `waitTimeoutMs`), `reject` fails at once when busy. */
export type SerializedMode = 'wait' | 'reject';

/** Options of {@link LockService.run}. */
export interface RunOptions extends AcquireOptions {
  /** `wait` (default) or `reject` (`LockBusyError` at once when the key is busy). */
  mode?: SerializedMode;
  /** Most waiters for this key in this process (default: the module's `maxPending`). */
  maxPending?: number;
  /** `Class#method` named in error messages (the decorator sets it). */
  handler?: string;
}

/** A key held by the current call, as `LockService.acquire` returns it. */
export interface HeldKey {
  readonly lock: Lock;
  /** True when an enclosing call already held the key: `release()` then does nothing. */
  readonly reentrant: boolean;
  /** Releases the key (idempotent). Never throws: a failed release is logged; the lease ends it. */
  release(): Promise<void>;
}

interface HeldEntry {
  lock: Lock;
  active: boolean;
}

interface LockContext {
  readonly locks: ReadonlyMap<string, HeldEntry>;
  /** The decorated method the interceptor is about to call with the key already held. */
  passThrough: unknown;
}

/**
 * The programmatic door to serialization, and what `@Serialized` uses underneath.
 * It adds to the provider what belongs to a call rather than to a backend:
 * `reject` mode, reentrancy (a call that already holds a key in its async context
 * runs at once when it asks again), and releasing whatever happens.
 */
@Injectable()
export class LockService {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  // One per service instance: two apps in one process never see each other's locks.
  private readonly context = new AsyncLocalStorage<LockContext>();

  constructor(readonly provider: LockProvider) {}

  /**
   * Runs `fn` while holding `key`, one caller at a time per key, in arrival order,
   * and releases the key when `fn` settles. The lock is handed to `fn`: watch
   * `lock.signal` and store `lock.fencingToken` with writes that must never come
   * from a holder that lost its lock.
   *
   * @throws LockTimeoutError waited `waitTimeoutMs` without getting the key
   * @throws LockBusyError `mode: 'reject'` and the key is busy, or `maxPending` reached
   * @throws LockBackendError the backend cannot be reached (`fn` does not run)
   */
  async run<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options: RunOptions = {}): Promise<T> {
    const held = await this.acquire(key, options);
    try {
      return await this.runHolding(held, () => fn(held.lock));
    } finally {
      await held.release();
    }
  }

  /**
   * Acquires `key` with the options of {@link run} and returns it held; the caller
   * must call `release()`. Run the protected work through {@link runHolding} so that
   * nested calls see the key as held.
   */
  async acquire(key: string, options: RunOptions = {}): Promise<HeldKey> {
    if (typeof key !== 'string' || key === '') {
      throw new SerializationKeyError(String(key), typeof key === 'string' ? 'missing' : 'not-scalar', [], options.handler);
    }
    const entry = this.context.getStore()?.locks.get(key);
    if (entry?.active) return { lock: entry.lock, reentrant: true, release: async () => undefined };

    const { mode, handler, ...acquireOptions } = options;
    try {
      const lock =
        mode === 'reject'
          ? await this.tryOrBusy(key, acquireOptions)
          : await this.provider.acquire(key, acquireOptions as ProviderAcquireOptions);
      return this.held(lock, handler);
    } catch (error) {
      if (error instanceof SerializedError && handler) error.attachHandler(handler);
      throw error;
    }
  }

  /**
   * Runs `fn` in an async context where `held` counts as held, so a nested
   * `run`/`@Serialized` on the same key runs at once instead of deadlocking.
   */
  runHolding<R>(held: HeldKey, fn: () => R, passThrough?: unknown): R {
    if (held.reentrant && passThrough === undefined) return fn();
    const locks = new Map(this.context.getStore()?.locks);
    if (!held.reentrant) locks.set(held.lock.key, (held as InternalHeldKey).entry);
    return this.context.run({ locks, passThrough }, fn);
  }

  /** Whether the current async context holds `key`. */
  isHeld(key: string): boolean {
    return this.context.getStore()?.locks.get(key)?.active === true;
  }

  /**
   * True once for `method` when the interceptor already serialized the call it is
   * making, so the decorated method's own wrapper does not lock again.
   * @internal
   */
  consumePassThrough(method: unknown): boolean {
    const store = this.context.getStore();
    if (!store || store.passThrough !== method) return false;
    store.passThrough = undefined;
    return true;
  }

  private async tryOrBusy(key: string, options: AcquireOptions): Promise<Lock> {
    const lock = await this.provider.tryAcquire(key, options);
    if (!lock) throw new LockBusyError(key, 'held');
    return lock;
  }

  private held(lock: Lock, handler: string | undefined): InternalHeldKey {
    const entry: HeldEntry = { lock, active: true };
    return {
      lock,
      reentrant: false,
      entry,
      release: async () => {
        if (!entry.active) return;
        entry.active = false;
        const signal = existingSignal(lock);
        if (signal?.aborted) {
          this.logger.warn(`${describe(lock.key, handler)} was lost while its holder ran: ${String(signal.reason?.message ?? signal.reason)}`);
        }
        try {
          await lock.release();
        } catch (error) {
          // The work is done; failing the call now would lose its result. The lease ends the lock.
          this.logger.warn(`Could not release ${describe(lock.key, handler)}: ${(error as Error)?.message ?? error}`);
        }
      },
    };
  }
}

interface InternalHeldKey extends HeldKey {
  readonly entry: HeldEntry;
}

function existingSignal(lock: Lock): AbortSignal | undefined {
  return typeof (lock as Partial<LazySignal>)[PEEK_SIGNAL] === 'function' ? (lock as LazySignal)[PEEK_SIGNAL]() : lock.signal;
}

function describe(key: string, handler: string | undefined): string {
  return handler ? `lock "${key}" (in ${handler})` : `lock "${key}"`;
}
