import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import type { AcquireOptions } from './acquire-options.interface';
import { validateAcquireOptions } from './config/acquire-options.validator';
import { DONE, isPromiseLike, releaseAfter, releaseAndThrow, releaseReturning, releaseWhenSettled } from './internal/release.after';
import { joinableLockOn, innermostActive, mayOutlive, outerOf, runWithContext, type LockContext } from './lock.context';
import { LockBusyError, LockOrderError, LockTimeoutError, LockUpgradeError, SerializationKeyError, SerializedError } from './errors';
import type { Lock } from './lock.interface';
import { LockProvider } from './lock.provider';
import { doorOf, type LockDoor } from './local/lock-door.interface';
import { inspectorOf, type KeyInspector } from './inspect/key-inspector.interface';
import type { LockInfo } from './inspect/lock-info.interface';
import { hasLoneSurrogate } from './key/lock-key.composer';
import type { InterceptedCall } from './metadata/intercepted.call';
import { SERIALIZED_LOGGER_CONTEXT } from './serialized.constants';
import { activeLock, OwnedLock, type HeldKey } from './lock.hold';
import { HeldSet, lockSetOf, type LockSet } from './lock-set.hold';
import { canonicalOrder, compareKeys, distinctKeys } from './key/key-set.order';
import { SERIALIZED_DEFAULTS } from './serialized.defaults';
import { performance } from 'node:perf_hooks';
import { SerializedMetrics } from './observability/serialized.metrics';
import type { SerializedTracing } from './observability/serialized.tracing';
import type { Span } from '@opentelemetry/api';
import { driverOf } from './observability/driver-name.resolver';
import { runInTransaction, type TransactionLocks, type TransactionOption } from './transaction/transaction-locks.runner';
import { concurrencyInTransactionProblem } from './transaction/transaction-options.interface';

// The options of a call that gives none (never written to): nothing to validate.
const NO_OPTIONS: RunOptions = Object.freeze({});

export type { HeldKey } from './lock.hold';
export type { LockSet } from './lock-set.hold';

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
  /** Run `fn` in the app's transaction holding `pg_advisory_xact_lock` on the key (docs/transactions.md). */
  transaction?: TransactionOption;
}

/**
 * The programmatic door to serialization, and what `@Serialized` uses underneath.
 * It adds to the provider what belongs to a call rather than to a backend:
 * `reject` mode, reentrancy (a call that already holds a key in its async context
 * runs at once when it asks again), and releasing whatever happens.
 */
/** What a {@link LockService} takes from the module's options (`SerializedModule` passes them). */
export interface LockServiceSettings {
  /** The module's `reentrant` option; default `true`. */
  readonly reentrant?: boolean;
  /** The module's `waitTimeoutMs` option, the budget of a key set; default the library's. */
  readonly waitTimeoutMs?: number;
  /** Transaction mode's locks, when the module has them. @internal */
  readonly transactions?: TransactionLocks;
}

@Injectable()
export class LockService {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  // One per service instance: two apps in one process never see each other's locks.
  private readonly context = new AsyncLocalStorage<LockContext>();
  // OpenTelemetry instruments, or undefined (no @opentelemetry/api, no MeterProvider): one null check per call.
  private metrics: SerializedMetrics | undefined;
  // Spans, or undefined (tracing off, or 'auto' without @opentelemetry/api or a TracerProvider): one null check per call.
  private tracing: SerializedTracing | undefined;

  /**
   * Whether calls that do not say (`reentrant` of {@link RunOptions}) join an
   * enclosing holder of their key: the module's `reentrant` option (env
   * `SERIALIZED_REENTRANT`), `true` by default.
   */
  readonly reentrant: boolean;

  /**
   * The wait budget of a key set whose call gives no `waitTimeoutMs` (one budget
   * for the whole set): the module's `waitTimeoutMs` option.
   */
  readonly waitTimeoutMs: number;

  /** Transaction mode (`transaction` of {@link RunOptions}). */
  private readonly transactions: TransactionLocks | undefined;
  /** The provider, reached past its validation (this service validates each call once) and by its synchronous fast path. */
  private readonly door: LockDoor;
  /** What the provider can tell of a key's holders and waiters (`inspect`). */
  private readonly inspector: KeyInspector;
  /** `memory`, `redis`, `postgres` or a provider's class name. */
  private readonly driver: string;

  /**
   * @param provider the backend
   * @param settings what `SerializedModule` passes from its options; a service
   *   made by hand (a test) takes the defaults
   */
  constructor(provider: LockProvider, settings: LockServiceSettings = {}) {
    this.reentrant = settings.reentrant ?? true;
    this.waitTimeoutMs = settings.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.transactions = settings.transactions;
    this.metrics = SerializedMetrics.create(provider);
    this.door = doorOf(provider);
    this.inspector = inspectorOf(provider);
    this.driver = driverOf(provider);
  }

  /** `metrics: 'off'`: this service records nothing, whatever MeterProvider is registered. @internal */
  recordNoMetrics(): void {
    this.metrics = undefined;
  }

  /** `tracing` (`'auto'`/`'on'`): the spans to record, made by `SerializedModule`; `undefined` records none. @internal */
  traceWith(tracing: SerializedTracing | undefined): void {
    this.tracing = tracing;
  }

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
  run<T>(key: string, fn: (lock: Lock) => Promise<T> | T, options?: RunOptions): Promise<T>;
  /**
   * Runs `fn` while holding every key of `keys` together (a transfer between two
   * accounts: `run(['account:A', 'account:B'], ([from, to]) => …)`), and releases
   * them all when `fn` settles. `locks` follows the order of `keys`, duplicates
   * collapsed; each lock has its own `fencingToken` and `signal`, and
   * `locks.signal` aborts when any of them is lost.
   *
   * All or nothing: the keys are taken one by one in one canonical order (by lock
   * key), so calls over overlapping sets never deadlock, in one process or across
   * processes; `waitTimeoutMs` bounds the whole set (one deadline); on a timeout, a
   * busy key in `reject` mode, an abort or a backend error, the keys already taken
   * are released before the returned promise rejects. A call whose context holds
   * some of the keys already takes the others only if every held key sorts before
   * every missing one; otherwise it fails at once with `LockOrderError`.
   *
   * @throws SerializationKeyError no key, a key that is not a non-empty string, or more than 16 distinct keys
   * @throws LockTimeoutError the whole set was not held within `waitTimeoutMs`
   * @throws LockBusyError `mode: 'reject'` and one of the keys is busy, or `maxPending` reached
   * @throws LockBackendError the backend cannot be reached (`fn` does not run)
   * @throws LockOrderError the context holds some keys and the rest cannot be taken in canonical order
   */
  run<T>(keys: readonly string[], fn: (locks: LockSet) => Promise<T> | T, options?: RunOptions): Promise<T>;
  run<T>(
    keyOrKeys: string | readonly string[],
    fnOfLocks: ((lock: Lock) => Promise<T> | T) | ((locks: LockSet) => Promise<T> | T),
    options: RunOptions = NO_OPTIONS,
  ): Promise<T> {
    // A key set goes its own way before any check of one key: that check would build (and drop) an error for the
    // array, 6–9 µs of every transfer (bench/analysis.md, scenario 7); one key pays a typeof for it.
    if (typeof keyOrKeys !== 'string' && Array.isArray(keyOrKeys))
      return this.runSet(keyOrKeys, fnOfLocks as (locks: LockSet) => Promise<T> | T, options);
    const key = keyOrKeys as string;
    const fn = fnOfLocks as (lock: Lock) => Promise<T> | T;
    const invalid = invalidCall(key, options, 'LockService#run');
    if (invalid) return Promise.reject(invalid);
    const reentrant = options.reentrant ?? this.reentrant;
    // Read once: the same store decides joining and is what the section's context links to.
    const store = reentrant ? this.context.getStore() : undefined;
    const joining = joinableLockOn(store, key) !== undefined; // then it takes the usual path (it joins the holder)
    const lock =
      joining || options.transaction || sharesKey(options) ? undefined : this.door.acquireNow(key, options.signal, options.leaseMs);
    if (!lock) return this.acquireAndRun(key, fn, options, reentrant, joining, store);
    // The key was free and taken synchronously: no promise of acquiring.
    this.metrics?.acquiredAtOnce(key);
    try {
      const result = this.runSection(new OwnedLock(lock, options.handler, this.logger, reentrant, this.metrics, this.tracing), fn, store);
      return result instanceof Promise ? result : Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Acquires `key` with the options of {@link run} and returns it held; the caller
   * must call `release()`. Run the protected work through {@link runHolding} so that
   * nested calls see the key as held. Plumbing of the decorators; users call {@link run}.
   * @internal
   */
  acquire(key: string, options: RunOptions = NO_OPTIONS): Promise<HeldKey> {
    const invalid = invalidCall(key, options, 'LockService#acquire');
    if (invalid) return Promise.reject(invalid);
    return this.acquireValidated(key, options);
  }

  /**
   * {@link acquire} for a caller that validated `key` and `options` already: the
   * interceptor, whose options were checked when the decorator was applied and whose
   * key value was checked when it was read (`toKeyValue`). Nothing is validated again.
   * @internal
   */
  acquireValidated(key: string, options: RunOptions): Promise<HeldKey> {
    const reentrant = options.reentrant ?? this.reentrant;
    const entry = reentrant ? joinableLockOn(this.context.getStore(), key) : undefined;
    if (entry?.active) {
      if (entry.shared && options.shared !== true) return Promise.reject(new LockUpgradeError(key, options.handler));
      return Promise.resolve({ lock: entry.lock, reentrant: true, release: () => DONE });
    }
    const since = this.metrics?.waiting(key);
    const wait = this.tracing?.waiting(key);
    return this.acquireFromProvider(key, options).then(
      (lock) => this.holding(key, lock, since, options, reentrant, wait),
      (error: unknown) => this.acquireFailed(key, since, error, options.handler, wait),
    );
  }

  /**
   * {@link acquireValidated} without its promise when `key` is free and taken at once
   * (the interceptor's fast path, as {@link run} has); `undefined` otherwise — a held
   * or joined key — and the caller goes through `acquireValidated`. `key` and
   * `options` must be valid already (see {@link acquireValidated}).
   * @internal
   */
  acquireNow(key: string, options: RunOptions): HeldKey | undefined {
    const reentrant = options.reentrant ?? this.reentrant;
    if (reentrant && this.isHeld(key)) return undefined; // it joins the holder: acquire's path
    if (sharesKey(options)) return undefined; // held beside others: the provider's line decides
    const lock = this.door.acquireNow(key, options.signal, options.leaseMs);
    if (!lock) return undefined;
    this.metrics?.acquiredAtOnce(key);
    return new OwnedLock(lock, options.handler, this.logger, reentrant, this.metrics, this.tracing);
  }

  /**
   * Runs `fn` in an async context where `held` counts as held, so a nested
   * `run`/`@Serialized` on the same key runs at once instead of deadlocking —
   * unless `held` was acquired with `reentrant: false`: then nothing inside joins
   * it, and `fn` runs in the caller's context (no AsyncLocalStorage at all) except
   * under the interceptor, whose handler may ask for its lock (`@SerializedLock()`).
   * `interceptedCall` announces the decorated handler the interceptor is about to call
   * (see `metadata/intercepted.call.ts`).
   * @internal
   */
  runHolding<R>(held: HeldKey, fn: () => R, interceptedCall?: InterceptedCall): R {
    const store = this.context.getStore();
    if (held instanceof HeldSet) return runWithContext(this.context, held.contextIn(store, interceptedCall), store, fn);
    if (held.reentrant) {
      // A call joining an enclosing holder: the same lock, entered again.
      if (interceptedCall === undefined && store?.innermost.lock === held.lock) return fn();
      return runWithContext(this.context, { held: undefined, outer: outerOf(store), innermost: held, interceptedCall }, store, fn);
    }
    if (!(held as OwnedLock).joinable) {
      if (interceptedCall === undefined) return fn();
      return runWithContext(this.context, { held: undefined, outer: outerOf(store), innermost: held, interceptedCall }, store, fn);
    }
    return runWithContext(this.context, { held: held as OwnedLock, outer: outerOf(store), innermost: held, interceptedCall }, store, fn);
  }

  /**
   * Who holds `key` right now, since when, and how many wait for it — in this
   * process and, where the backend can tell, in every process sharing it
   * (docs/observability.md, "Who holds my key?"). Read-only and safe in
   * production: it never takes, extends or releases a lock, never delays a caller
   * of the key, and costs at most one bounded backend read (Redis: one read-only
   * script, O(1) plus a look at the first 256 places of the queue; PostgreSQL: one
   * statement on a lock session reading `pg_locks` for the key; in-memory: nothing
   * but this process). Keys as given to {@link run} (for `@Serialized`,
   * `<scope>:<value>`). In transaction mode this process's holders and waiters are
   * listed too.
   *
   * @throws SerializationKeyError `key` is not a non-empty string
   * @throws LockBackendError the backend could not be read
   */
  async inspect(key: string): Promise<LockInfo> {
    const invalid = invalidCall(key, NO_OPTIONS, 'LockService#inspect');
    if (invalid) throw invalid;
    const info = await this.inspector.inspect(key);
    return this.transactions ? this.transactions.addHere(info, this.driver === 'postgres') : info;
  }

  /** Whether the current async context holds `key`. */
  isHeld(key: string): boolean {
    return joinableLockOn(this.context.getStore(), key) !== undefined;
  }

  /**
   * The lock the current async context holds: the one for `key` (a key as given to
   * {@link run}; for `@Serialized`, `<scope>:<value>`), or without `key` the
   * innermost — the section entered last. `undefined` outside any section. For
   * service code called from a decorated handler or from `run`: read
   * `fencingToken` for a fenced write, watch `signal`, call `extend()`.
   * A `run` with `reentrant: false` takes no part in the async context, so its lock
   * is not seen here (its `fn` receives it); a decorated handler's always is.
   */
  current(key?: string): Lock | undefined {
    const store = this.context.getStore();
    if (!store) return undefined;
    const inner = store.innermost;
    // The innermost section may be one that others cannot join (`reentrant: false`): it is not in the chain joinableLockOn walks.
    const innerActive =
      inner instanceof OwnedLock
        ? inner.active
        : inner instanceof HeldSet
          ? inner.active
          : activeLock(joinableLockOn(store, inner.lock.key)) === inner.lock;
    if (key !== undefined) {
      if (innerActive && inner instanceof HeldSet) return inner.lockOf(key) ?? activeLock(joinableLockOn(store, key));
      return innerActive && inner.lock.key === key ? inner.lock : activeLock(joinableLockOn(store, key));
    }
    if (innerActive) return inner.lock;
    // The innermost section ended while this context lives on: the nearest one around it still held.
    return innermostActive(store);
  }

  /**
   * The locks of the key set the innermost section holds (`run([...])`,
   * `@Serialized([...])`), in the order of its keys; `undefined` when that section
   * holds one key, or none. What `@SerializedLock()` gives a key set's handler.
   * @internal
   */
  currentSet(): LockSet | undefined {
    const inner = this.context.getStore()?.innermost;
    return inner instanceof HeldSet && inner.active ? inner.locks : undefined;
  }

  /**
   * Acquires every key of `keys` (lock keys, validated by the caller as key
   * values) for a section that {@link runHolding} then runs: the interceptor's and
   * the decorator's door to key sets. Rejects, after releasing whatever it took,
   * as {@link run} does with a key set.
   * @internal
   */
  acquireSet(keys: readonly string[], options: RunOptions): Promise<HeldKey> {
    const plan = this.plannedSet(keys, options, 'LockService#acquire');
    if (plan instanceof Promise) return plan;
    return this.acquireAll(plan.missing, options, plan.reentrant).then((owned) => this.heldSet(plan, owned));
  }

  /**
   * The intercepted call the interceptor set for the handler it is calling, if any
   * (see `metadata/intercepted.call.ts`).
   * @internal
   */
  interceptedCall(): InterceptedCall | undefined {
    return this.context.getStore()?.interceptedCall;
  }

  /** `run` with a key set: planned (validated, ordered, checked against what the context holds), taken, run, released. */
  private runSet<T>(keys: readonly string[], fn: (locks: LockSet) => Promise<T> | T, options: RunOptions): Promise<T> {
    const plan = this.plannedSet(keys, options, 'LockService#run');
    if (plan instanceof Promise) return plan;
    const { reentrant, store } = plan;
    const section = (owned: readonly OwnedLock[]) => this.runSetSection(this.heldSet(plan, owned), fn, store);
    if (options.transaction && plan.missing.length > 0) {
      const inTransaction = (locks: readonly Lock[]) =>
        section(
          locks.map(
            (lock) => new OwnedLock(lock, options.handler, this.logger, reentrant, this.metrics, this.tracing, options.shared === true),
          ),
        );
      return runInTransaction(this.transactions, plan.missing, options, inTransaction, (error) => {
        if (error instanceof SerializedError && options.handler) error.attachHandler(options.handler);
        throw error;
      });
    }
    return this.acquireAll(plan.missing, options, reentrant).then(section);
  }

  /**
   * The opening {@link runSet} and {@link acquireSet} share: the call's plan, or
   * the rejection it gets when {@link planSet} refuses it. Returned, not awaited:
   * an accepted call reaches its keys with no promise in between.
   */
  private plannedSet(keys: readonly string[], options: RunOptions, where: string): SetPlan | Promise<never> {
    const reentrant = options.reentrant ?? this.reentrant;
    const store = reentrant ? this.context.getStore() : undefined;
    try {
      return this.planSet(keys, options, reentrant, store, where);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A key set's call checked once: its options, each key (as {@link run} checks
   * one), the distinct keys in the order given and in canonical order, and which
   * of them the context holds already. Throws what the call rejects with.
   */
  private planSet(
    keys: readonly string[],
    options: RunOptions,
    reentrant: boolean,
    store: LockContext | undefined,
    where: string,
  ): SetPlan {
    const invalid = options === NO_OPTIONS ? undefined : invalidOptions(options, options.handler ?? where);
    if (invalid) throw invalid;
    if (!Array.isArray(keys)) throw new SerializationKeyError(String(keys), 'not-scalar', [], options.handler);
    for (const key of keys) {
      const bad = invalidKey(key, options.handler);
      if (bad) throw bad;
    }
    const given = distinctKeys(keys, `[${keys.join(', ')}]`, [], options.handler);
    const ordered = canonicalOrder(given);
    const joined = new Map<string, Lock>();
    const missing: string[] = [];
    let lastJoined: string | undefined;
    for (const key of ordered) {
      const held = store === undefined ? undefined : joinableLockOn(store, key);
      if (held === undefined) missing.push(key);
      else if (held.shared && options.shared !== true) throw new LockUpgradeError(key, options.handler);
      else joined.set((lastJoined = key), held.lock);
    }
    // Taking a key that sorts before one held already would invert the canonical order: a possible deadlock, refused at once.
    if (lastJoined !== undefined && missing.length > 0 && compareKeys(missing[0], lastJoined) < 0) {
      throw new LockOrderError([...joined.keys()], missing, options.handler);
    }
    return { given, missing, joined, reentrant, store };
  }

  /**
   * Takes `keys` (canonical order) one after the other, each with what is left of
   * the one budget; on any failure releases those taken — and waits for the
   * releases — before rejecting. A timeout names the whole budget.
   */
  private acquireAll(keys: readonly string[], options: RunOptions, reentrant: boolean): Promise<OwnedLock[]> {
    // Keys free in-process are taken synchronously, as run() takes one key (the in-memory driver; the others answer
    // undefined at once): a transfer between free accounts then costs no promise per key (bench row 7.memory.keys).
    const taken: OwnedLock[] = [];
    for (const key of sharesKey(options) ? [] : keys) {
      const lock = this.door.acquireNow(key, options.signal, options.leaseMs);
      if (!lock) break;
      this.metrics?.acquiredAtOnce(key);
      taken.push(new OwnedLock(lock, options.handler, this.logger, reentrant, this.metrics, this.tracing));
    }
    if (taken.length === keys.length) return Promise.resolve(taken);
    // Every key asked of a backend: the door takes them all in one request when it can and none is busy in this process.
    const together = taken.length === 0 && keys.length > 1 && !sharesKey(options) ? this.door.takeSet?.(keys, options) : undefined;
    if (together !== undefined) return this.acquiredTogether(keys, together, options, reentrant);
    return this.acquireRest(keys, taken, options, reentrant, performance.now());
  }

  /**
   * {@link acquireAll} when the door asked for the whole set at once (`together`):
   * its locks; or, a key busy in the backend (nothing held), key by key from the
   * first, in each key's line behind the callers that came meanwhile, with what is
   * left of the budget. An error rejects as it would key by key.
   */
  private acquiredTogether(
    keys: readonly string[],
    together: Promise<Lock[] | null>,
    options: RunOptions,
    reentrant: boolean,
  ): Promise<OwnedLock[]> {
    const started = performance.now();
    return together.then(
      (locks) => {
        if (locks === null) return this.acquireRest(keys, [], options, reentrant, started);
        const taken = locks.map((lock, i) => {
          this.metrics?.waiting(keys[i]);
          return this.holding(keys[i], lock, started, options, reentrant, this.tracing?.waiting(keys[i]));
        });
        // Given up while the set was being granted: nothing of it runs.
        if (!options.signal?.aborted) return taken;
        const reason: unknown = options.signal.reason;
        return Promise.all(taken.map((held) => held.release())).then(() => Promise.reject(reason));
      },
      (error: unknown) => {
        this.metrics?.waiting(keys[0]);
        return this.acquireFailed(keys[0], started, error, options.handler, this.tracing?.waiting(keys[0]));
      },
    );
  }

  /** {@link acquireAll} from the first key not taken at once: `taken` holds those before it; the budget runs from `started`. */
  private async acquireRest(
    keys: readonly string[],
    taken: OwnedLock[],
    options: RunOptions,
    reentrant: boolean,
    started: number,
  ): Promise<OwnedLock[]> {
    const budget = options.waitTimeoutMs ?? this.waitTimeoutMs;
    try {
      for (const key of keys.slice(taken.length)) {
        const left = Math.max(0, Math.floor(budget - (performance.now() - started)));
        const since = this.metrics?.waiting(key);
        const wait = this.tracing?.waiting(key);
        let lock: Lock;
        try {
          lock = await this.acquireFromProvider(key, { ...options, waitTimeoutMs: left });
        } catch (error) {
          this.acquireFailed(key, since, error, options.handler, wait);
        }
        taken.push(this.holding(key, lock, since, options, reentrant, wait));
        // Given up while the last key was being granted: nothing of the set runs.
        if (options.signal?.aborted) throw options.signal.reason;
      }
      return taken;
    } catch (error) {
      await Promise.all(taken.map((held) => held.release()));
      if (error instanceof LockTimeoutError && error.waitTimeoutMs !== budget) {
        throw new LockTimeoutError(error.key ?? '', budget, options.handler, { reason: error.reason ?? 'key-held' });
      }
      throw error;
    }
  }

  /** The set held: `plan`'s keys in the order given, each the lock acquired now (`owned`, canonical order) or the one joined. */
  private heldSet(plan: SetPlan, owned: readonly OwnedLock[]): HeldSet {
    const byKey = new Map(plan.joined);
    for (let i = 0; i < owned.length; i++) byKey.set(plan.missing[i], owned[i].lock);
    return new HeldSet(plan.given, lockSetOf(plan.given.map((key) => byKey.get(key)!)), owned, plan.reentrant);
  }

  /** Runs `fn` holding the set `held` and releases it (see {@link runSection}). */
  private runSetSection<T>(held: HeldSet, fn: (locks: LockSet) => Promise<T> | T, store: LockContext | undefined): Promise<T> | T {
    let result: Promise<T> | T;
    try {
      result = runWithContext(this.context, held.contextIn(store, undefined), store, () => fn(held.locks));
    } catch (error) {
      return releaseAndThrow(held, error);
    }
    return releaseAfter(held, result);
  }

  /** `run` for a key that was not free: one continuation between the provider's promise and `fn`, no async function. */
  private acquireAndRun<T>(
    key: string,
    fn: (lock: Lock) => Promise<T> | T,
    options: RunOptions,
    reentrant: boolean,
    joining: boolean,
    store: LockContext | undefined,
  ): Promise<T> {
    // Joining an enclosing holder: acquire's path (the call was validated in run).
    if (joining) return this.acquireValidated(key, options).then((held) => this.runHeld(held, fn));
    const since = this.metrics?.waiting(key);
    const wait = this.tracing?.waiting(key);
    const section = (lock: Lock) => this.runSection(this.holding(key, lock, since, options, reentrant, wait), fn, store);
    if (options.transaction)
      return runInTransaction(this.transactions, key, options, section, (error) =>
        this.acquireFailed(key, since, error, options.handler, wait),
      );
    return this.acquireFromProvider(key, options).then(
      // The reaction runs in the caller's async context, where `store` was read.
      section,
      (error: unknown) => this.acquireFailed(key, since, error, options.handler, wait),
    );
  }

  /**
   * Runs `fn` holding `held`, a lock acquired for this call, and releases it: in a
   * context of its own when nested calls may join it (`runHolding` without an
   * intercepted call), in the caller's otherwise. `store` is the caller's context. A
   * section that ends synchronously may leave its context in place (see
   * {@link mayOutlive}): putting `store` back would cost a second frame of the
   * AsyncLocalStorage, as much as entering.
   */
  private runSection<T>(held: OwnedLock, fn: (lock: Lock) => Promise<T> | T, store: LockContext | undefined): Promise<T> | T {
    let result: Promise<T> | T;
    if (!held.joinable) {
      try {
        result = fn(held.lock);
      } catch (error) {
        return releaseAndThrow(held, error);
      }
      return releaseAfter(held, result);
    }
    try {
      this.context.enterWith({ held, outer: outerOf(store), innermost: held, interceptedCall: undefined });
      result = fn(held.lock);
    } catch (error) {
      this.context.enterWith(store as LockContext);
      return releaseAndThrow(held, error);
    }
    if (isPromiseLike(result)) {
      this.context.enterWith(store as LockContext);
      return releaseWhenSettled(held, result);
    }
    if (!mayOutlive(store)) this.context.enterWith(store as LockContext);
    return releaseReturning(held, result);
  }

  /** Runs `fn` holding `held` and releases it (see `releaseAfter`: a synchronous `fn` costs no promise). */
  private runHeld<T>(held: HeldKey, fn: (lock: Lock) => Promise<T> | T): Promise<T> | T {
    let result: Promise<T> | T;
    try {
      result = this.runHolding(held, () => fn(held.lock));
    } catch (error) {
      return releaseAndThrow(held, error);
    }
    return releaseAfter(held, result);
  }

  /**
   * The provider's promise (the options go as they are: it reads only its own fields);
   * a synchronous throw rejects it. Validated here once per call, so the provider is
   * not asked to validate again.
   */
  private acquireFromProvider(key: string, options: RunOptions): Promise<Lock> {
    try {
      if (options.mode !== 'reject') return this.door.acquire(key, options);
      return this.door.tryAcquire(key, options).then((lock) => lock ?? Promise.reject(new LockBusyError(key, 'held')));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private holding(
    key: string,
    lock: Lock,
    since: number | undefined,
    options: RunOptions,
    reentrant: boolean,
    wait: Span | undefined,
  ): OwnedLock {
    if (since !== undefined) this.metrics?.acquired(key, since);
    if (wait) this.tracing!.acquired(wait, lock);
    return new OwnedLock(lock, options.handler, this.logger, reentrant, this.metrics, this.tracing, options.shared === true);
  }

  private acquireFailed(
    key: string,
    since: number | undefined,
    error: unknown,
    handler: string | undefined,
    wait: Span | undefined,
  ): never {
    if (since !== undefined) this.metrics?.failed(key, since, error);
    if (wait) this.tracing!.failed(wait, key, error);
    if (error instanceof SerializedError && handler) error.attachHandler(handler);
    throw error;
  }
}

/**
 * The one validation of a call (its options, then its key: a string, not empty,
 * without a lone surrogate, which UTF-8 cannot carry, so every backend tells two
 * keys apart alike). What `LockService` passes on is trusted from then on.
 */
function invalidCall(key: string, options: RunOptions, where: string): Error | undefined {
  const invalid = options === NO_OPTIONS ? undefined : invalidOptions(options, options?.handler ?? where);
  if (invalid) return invalid;
  if (typeof key !== 'string' || key === '')
    return new SerializationKeyError(String(key), typeof key === 'string' ? 'missing' : 'not-scalar', [], options.handler);
  if (hasLoneSurrogate(key)) return new SerializationKeyError(key, 'unencodable', [], options.handler);
  return undefined;
}

/** The options' own check, and what transaction mode cannot do (`concurrency` > 1). */
function invalidOptions(options: RunOptions, where: string): Error | undefined {
  const invalid = validateAcquireOptions(options, where);
  if (invalid || !options.transaction || !(typeof options.concurrency === 'number' && options.concurrency > 1)) return invalid;
  return new RangeError(`${concurrencyInTransactionProblem(options.concurrency)} (in ${where})`);
}

/** Whether a call holds its key beside other holders (`concurrency` > 1 or `shared`): never the synchronous grant. */
function sharesKey(options: RunOptions): boolean {
  return options.shared === true || (options.concurrency !== undefined && options.concurrency !== 1);
}

/** A key's own check: a string, not empty, without a lone surrogate. */
function invalidKey(key: string, handler: string | undefined): Error | undefined {
  if (typeof key !== 'string' || key === '')
    return new SerializationKeyError(String(key), typeof key === 'string' ? 'missing' : 'not-scalar', [], handler);
  if (hasLoneSurrogate(key)) return new SerializationKeyError(key, 'unencodable', [], handler);
  return undefined;
}

/** A key set's call, checked (`LockService.planSet`). */
interface SetPlan {
  /** The distinct keys in the order given: the order of the locks handed to the section. */
  readonly given: readonly string[];
  /** The keys to take, in canonical order. */
  readonly missing: readonly string[];
  /** The keys an enclosing section holds already, with their locks (joined, not released by this call). */
  readonly joined: ReadonlyMap<string, Lock>;
  /** Whether the call joins what its context holds (`reentrant`): the locks it takes are joinable by nested calls. */
  readonly reentrant: boolean;
  /** The context of held locks the call runs in (none when not reentrant): what it joins and what its section links to. */
  readonly store: LockContext | undefined;
}
