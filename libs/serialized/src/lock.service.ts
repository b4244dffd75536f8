import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import type { AcquireOptions, ProviderAcquireOptions } from './acquire-options.interface';
import { validateAcquireOptions } from './config/acquire-options.validator';
import { redactUrls } from './internal/redact';
import { LockBusyError, SerializationKeyError, SerializedError } from './errors';
import type { Lock } from './lock.interface';
import { LockProvider } from './lock.provider';
import { hasLoneSurrogate } from './key/lock-key';
import { SERIALIZED_LOGGER_CONTEXT } from './serialized.constants';

/** An already settled release: what `HeldLock.release` returns when nothing is left to wait for. */
const DONE: Promise<void> = Promise.resolve();

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
  /**
   * `true` (default: the module's `reentrant`, itself `true`): a call whose async
   * context already holds `key` runs at once, and calls inside this one (awaited or
   * spawned: a timer, a batch flusher) join it while it holds the key. `false`: the
   * call takes no part in the async context — it queues like anyone else even under
   * a holder of its key, and nothing inside it joins it. Work spawned inside a
   * section then waits for the section; an awaited nested call on the same key
   * deadlocks until `waitTimeoutMs` (docs/semantics.md, "Reentrancy").
   */
  reentrant?: boolean;
}

/** A key held by the current call, as `LockService.acquire` returns it. */
export interface HeldKey {
  readonly lock: Lock;
  /** True when an enclosing call already held the key: `release()` then does nothing. */
  readonly reentrant: boolean;
  /** Releases the key (idempotent). Never throws: a failed release is logged; the lease ends it. */
  release(): Promise<void>;
}

interface LockContext {
  readonly locks: ReadonlyMap<string, HeldLock>;
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

  /**
   * Whether calls that do not say (`reentrant` of {@link RunOptions}) join an
   * enclosing holder of their key; `SerializedModule` sets it from its `reentrant`
   * option (env `SERIALIZED_REENTRANT`).
   */
  reentrant = true;

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
   * @throws RangeError / TypeError an option is invalid (a fraction, `NaN`, a negative number); `fn` does not run
   */
  run<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options: RunOptions = {}): Promise<T> {
    const invalid = validateAcquireOptions(options, options?.handler ?? 'LockService#run');
    if (invalid) return Promise.reject(invalid);
    const reentrant = options.reentrant ?? this.reentrant;
    // A key this context already holds takes the usual path (it joins the holder).
    const lock = reentrant && this.isHeld(key) ? undefined : this.provider.acquireNow(key, options);
    if (!lock) return this.acquireAndRun(key, fn, options);
    // The key was free and taken synchronously: the same steps as `acquireAndRun`,
    // without the promises of acquiring (and, for a lock released at once, of releasing).
    const held = new HeldLock(lock, options.handler, this.logger, reentrant);
    let result: Promise<T> | T;
    try {
      result = this.runHolding(held, () => fn(lock));
    } catch (error) {
      const released = held.release();
      return released === DONE ? Promise.reject(error) : released.then(() => Promise.reject(error));
    }
    return Promise.resolve(result).then(
      (value) => {
        const released = held.release();
        return released === DONE ? value : released.then(() => value);
      },
      (error: unknown) => {
        const released = held.release();
        if (released === DONE) throw error;
        return released.then(() => Promise.reject(error));
      },
    );
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
    // Every backend must tell two keys apart alike; UTF-8 cannot carry a lone surrogate.
    if (hasLoneSurrogate(key)) throw new SerializationKeyError(key, 'unencodable', [], options.handler);
    const invalid = validateAcquireOptions(options, options?.handler ?? 'LockService#acquire');
    if (invalid) throw invalid;
    const reentrant = options.reentrant ?? this.reentrant;
    const entry = reentrant ? this.context.getStore()?.locks.get(key) : undefined;
    if (entry?.active) return { lock: entry.lock, reentrant: true, release: async () => undefined };

    const { mode, handler, reentrant: _, ...acquireOptions } = options;
    try {
      const lock =
        mode === 'reject'
          ? await this.tryOrBusy(key, acquireOptions)
          : await this.provider.acquire(key, acquireOptions as ProviderAcquireOptions);
      return new HeldLock(lock, handler, this.logger, reentrant);
    } catch (error) {
      if (error instanceof SerializedError && handler) error.attachHandler(handler);
      throw error;
    }
  }

  /**
   * Runs `fn` in an async context where `held` counts as held, so a nested
   * `run`/`@Serialized` on the same key runs at once instead of deadlocking
   * (unless `held` was acquired with `reentrant: false`: then `fn` runs in the
   * caller's context, which costs no AsyncLocalStorage at all).
   */
  runHolding<R>(held: HeldKey, fn: () => R, passThrough?: unknown): R {
    const joins = !held.reentrant && (held as HeldLock).joinable;
    if (!joins && passThrough === undefined) return fn();
    const locks = new Map(this.context.getStore()?.locks);
    if (joins) locks.set(held.lock.key, held as HeldLock);
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

  private async acquireAndRun<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options: RunOptions): Promise<T> {
    const held = await this.acquire(key, options);
    try {
      return await this.runHolding(held, () => fn(held.lock));
    } finally {
      const released = held.release();
      if (released !== DONE) await released;
    }
  }

  private async tryOrBusy(key: string, options: AcquireOptions): Promise<Lock> {
    const lock = await this.provider.tryAcquire(key, options);
    if (!lock) throw new LockBusyError(key, 'held');
    return lock;
  }
}

/** A key this call acquired; it is also what nested calls find in the async context. */
class HeldLock implements HeldKey {
  readonly reentrant = false;
  /** False once released: a nested call that outlives the holder must not count it as held. */
  active = true;

  constructor(
    readonly lock: Lock,
    private readonly handler: string | undefined,
    private readonly logger: Logger,
    /** Whether calls inside the holder's async context may join it (`reentrant`). */
    readonly joinable: boolean,
  ) {}

  /**
   * The one release path. Returns {@link DONE} itself when the release is already
   * complete (always for a lock with `releaseNow`), so callers on the fast path can
   * skip awaiting it; the promise never rejects.
   */
  release(): Promise<void> {
    if (!this.active) return DONE;
    this.active = false;
    const lost = this.lock.lost;
    if (lost) this.logger.warn(`${describe(this.lock.key, this.handler)} was lost while its holder ran: ${redactUrls(String(lost.message ?? lost))}`);
    try {
      if (this.lock.releaseNow) {
        this.lock.releaseNow();
        return DONE;
      }
      return this.lock.release().then(undefined, (error: unknown) => this.couldNotRelease(error));
    } catch (error) {
      this.couldNotRelease(error);
      return DONE;
    }
  }

  private couldNotRelease(error: unknown): void {
    // The work is done; failing the call now would lose its result. The lease ends the lock.
    this.logger.warn(`Could not release ${describe(this.lock.key, this.handler)}: ${redactUrls(String((error as Error)?.message ?? error))}`);
  }
}

function describe(key: string, handler: string | undefined): string {
  return handler ? `lock "${key}" (in ${handler})` : `lock "${key}"`;
}
