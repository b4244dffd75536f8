import { performance } from 'node:perf_hooks';
import { LockBackendError, LockBusyError, LockTimeoutError, SerializedError } from '../errors';
import { SerializedConfigError } from '../config/serialized-config.error';
import { redactUrls } from '../internal/secrets.redact';
import type { Lock } from '../lock.interface';
import { advisoryLockKey } from '../providers/postgres/advisory-key.hash';
import { cancelTargetOf, sendCancelRequest } from '../providers/postgres/cancel.request';
import { Logger } from '@nestjs/common';
import { LockLines } from '../local/lock.lines';
import { holderHere } from '../inspect/holder.here';
import type { LockInfo } from '../inspect/lock-info.interface';
import { InMemoryBackend } from '../providers/memory/in-memory.backend';
import type { InMemoryLock } from '../providers/memory/in-memory.lock';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { isAlreadyCreated, LOCK_NOT_AVAILABLE, sqlStateOf } from './transaction-error.classifier';
import type { TransactionHostLike, TransactionHostResolver } from './transaction-host.resolver';
import { TransactionIsolationError } from './transaction-isolation.error';
import { TransactionLock } from './transaction.lock';
import { lockTimeoutOf, transactionLockStatements, type TransactionLockStatements } from './transaction-lock.statements';
export type { TransactionOption } from './transaction-options.interface';
import { connectionNameOf, transactionOptionProblem, type TransactionOption, type TransactionQuery } from './transaction-options.interface';
import { connectionOf, recognisedQuery } from './transaction-query.adapter';

/** What transaction mode takes from the module's options. */
export interface TransactionLocksSettings {
  readonly keyPrefix: string;
  readonly fencingSequence: string;
  readonly createSchema: boolean;
  readonly waitTimeoutMs: number;
  readonly maxPending: number;
  readonly maxPendingTotal: number;
  readonly shutdownGraceMs: number;
  readonly query?: TransactionQuery;
}

/** The options of one transaction-mode call (those of `LockService.run`). */
export interface TransactionRunOptions {
  readonly transaction: TransactionOption;
  readonly mode?: 'wait' | 'reject';
  readonly waitTimeoutMs?: number;
  readonly maxPending?: number;
  readonly signal?: AbortSignal;
  readonly handler?: string;
  /** Hold the keys shared (`pg_advisory_xact_lock_shared`) beside other shared holders. */
  readonly shared?: boolean;
}

/** How long a cancel of an abandoned lock statement may take to reach the server (best effort: `lock_timeout` bounds the wait anyway). */
const CANCEL_DELIVERY_MS = 2000;

// A key set in a joined transaction: ROLLBACK TO releases the advisory locks taken after the savepoint.
const SET_SAVEPOINT = 'SAVEPOINT nestjs_serialized_set';
const ROLLBACK_TO_SAVEPOINT = 'ROLLBACK TO SAVEPOINT nestjs_serialized_set';
const RELEASE_SAVEPOINT = 'RELEASE SAVEPOINT nestjs_serialized_set';

/** Where a call stands, for telling the section's own errors from the lock's. */
const enum Phase {
  Locking,
  Section,
  Returned,
}

/** One call's progress: its phase, its section's own error, and the server locks it holds (let go after COMMIT or ROLLBACK). */
interface TransactionState {
  phase: Phase;
  sectionError: unknown;
  readonly locks: TransactionLock[];
}

/**
 * Locks inside the application's own transaction (docs/transactions.md): the
 * key's waiters queue in this process first (FIFO, an in-memory lock per key),
 * so at most one connection per key and process waits in the server; the one at
 * the head begins (or joins) a transaction through the app's `TransactionHost`,
 * takes `pg_advisory_xact_lock` — the postgres driver's 64-bit key, so the two
 * exclude each other — and draws its fencing token in the same statement; the
 * section runs in that transaction, and COMMIT or ROLLBACK releases the key. The
 * next local waiter is let in only after that, so it sees the commit.
 */
export class TransactionLocks {
  /** The key's callers of this process, in line (the local layer with nothing to ask). */
  private readonly local: LockLines<InMemoryLock>;
  private readonly statements: TransactionLockStatements;
  private readonly sequences = new WeakMap<TransactionHostLike, Promise<void>>();
  /** The server locks of each key that callers of this process hold in their transactions (for `addHere`): several when held shared. */
  private readonly granted = new Map<string, Set<TransactionLock>>();

  constructor(
    private readonly settings: TransactionLocksSettings,
    private readonly hosts: TransactionHostResolver,
  ) {
    const backend = new InMemoryBackend(
      { released: (lock) => this.local.released(lock) },
      new Logger(SERIALIZED_LOGGER_CONTEXT),
      'transaction mode',
    );
    this.local = new LockLines<InMemoryLock>(backend, {
      waitTimeoutMs: settings.waitTimeoutMs,
      maxPending: settings.maxPending,
      maxPendingTotal: settings.maxPendingTotal,
      shutdownGraceMs: settings.shutdownGraceMs,
    });
    this.statements = transactionLockStatements(settings.fencingSequence);
  }

  /** The host of `option`, or a `SerializedConfigError` naming what to install and import. */
  host(option: TransactionOption, feature: string): TransactionHostLike {
    return this.hosts.host(connectionNameOf(option), feature);
  }

  /** Whether statements can be sent through `host`'s transactions (a recognised adapter or `transaction.query`). */
  canQuery(host: TransactionHostLike): boolean {
    return this.settings.query !== undefined || recognisedQuery(host.tx) !== undefined;
  }

  /**
   * Runs `section` holding `key` inside a transaction. Resolves after the COMMIT
   * of a transaction it began, or when the section returns inside a joined one.
   * The section's own errors reach the caller unchanged, after the rollback.
   */
  run<T>(key: string, options: TransactionRunOptions, section: (lock: Lock) => Promise<T> | T): Promise<T> {
    return this.runSet([key], options, (locks) => section(locks[0]));
  }

  /**
   * {@link run} for a key set: `keys` distinct and in canonical order (see
   * `key/key-set.order.ts`). Each key's local line is joined in that order, then one
   * transaction takes the server locks in that order, each statement bounded by
   * what is left of the one `waitTimeoutMs`. All or nothing: a failure before the
   * section ran lets go of every key taken so far before it reaches the caller —
   * the local lines at once, the server locks by the ROLLBACK of the transaction
   * begun here, or in a joined transaction by `ROLLBACK TO SAVEPOINT` (which
   * releases transaction-level advisory locks taken after the savepoint).
   */
  async runSet<T>(
    keys: readonly string[],
    options: TransactionRunOptions,
    section: (locks: readonly Lock[]) => Promise<T> | T,
  ): Promise<T> {
    const handler = options.handler ?? 'LockService#run';
    const host = this.host(options.transaction, `transaction mode (${handler})`);
    const startedAt = performance.now();
    const waitTimeoutMs = options.waitTimeoutMs ?? this.settings.waitTimeoutMs;
    const key = keys[0];
    await this.sequenceOf(host, key);
    const locals = await this.queueHere(keys, options, waitTimeoutMs, startedAt);
    const state: TransactionState = { phase: Phase.Locking, sectionError: undefined, locks: [] };
    try {
      if (host.isTransactionActive())
        return await this.inTransaction(host, locals, options, waitTimeoutMs, startedAt, true, section, state);
      try {
        return await host.withTransaction(() => this.inTransaction(host, locals, options, waitTimeoutMs, startedAt, false, section, state));
      } catch (error) {
        if (state.phase === Phase.Section) throw state.sectionError ?? error;
        if (state.phase === Phase.Returned) throw new LockBackendError(`COMMIT failed: ${describe(error)}`, { key, cause: error });
        if (options.signal?.aborted && error === options.signal.reason) throw error;
        throw this.lockError(key, error, waitTimeoutMs, 'could not begin a transaction');
      }
    } finally {
      for (const lock of state.locks) this.letGo(lock);
      // After COMMIT/ROLLBACK: the next caller of this process sees what this one committed.
      for (const local of locals) void local.release();
    }
  }

  /**
   * This process's place in the local line of every key of `keys`, taken in that
   * order within the one budget; on a failure, those taken are let go first.
   */
  private async queueHere(
    keys: readonly string[],
    options: TransactionRunOptions,
    waitTimeoutMs: number,
    startedAt: number,
  ): Promise<InMemoryLock[]> {
    const locals: InMemoryLock[] = [];
    try {
      for (const key of keys) {
        const left = keys.length === 1 ? waitTimeoutMs : Math.max(0, Math.floor(waitTimeoutMs - (performance.now() - startedAt)));
        const local =
          options.mode === 'reject'
            ? await this.local.tryAcquire(key, { maxPending: options.maxPending, shared: options.shared })
            : await this.local.acquire(key, {
                waitTimeoutMs: left,
                maxPending: options.maxPending,
                signal: options.signal,
                shared: options.shared,
              });
        if (!local) throw new LockBusyError(key, 'held');
        locals.push(local);
      }
      return locals;
    } catch (error) {
      await Promise.all(locals.map((local) => local.release()));
      if (error instanceof LockTimeoutError && error.waitTimeoutMs !== waitTimeoutMs)
        throw new LockTimeoutError(error.key ?? keys[0], waitTimeoutMs, undefined, { reason: 'key-held' });
      throw error;
    }
  }

  /**
   * `LockService.inspect` in transaction mode: `info` (what the provider saw) with
   * this process's transaction-mode holder and waiters of its key added. A caller
   * at the head of the key's local line without a server lock yet is waiting for
   * it in the server (or beginning its transaction). `serverSeen`: the provider
   * read PostgreSQL's lock table (the postgres driver), where it already counted
   * that wait and listed this process's transaction as another session's hold.
   */
  addHere(info: LockInfo, serverSeen: boolean): LockInfo {
    const { holder, others, waiting } = this.local.inspectHere(info.key);
    if (!holder && waiting === 0) return info;
    const mine = [...(this.granted.get(info.key) ?? [])];
    // Let in here (several when shared) but without their server lock yet: waiting for it in the server.
    const asking = Math.max(0, (holder ? 1 + (others?.length ?? 0) : 0) - mine.length);
    const suffixes = mine.map((lock) => `#${lock.backendPid}`);
    const elsewhere = info.holders.filter((other) => other.here || !suffixes.some((suffix) => other.instance?.endsWith(suffix)));
    const now = performance.now();
    return {
      key: info.key,
      holders: [...mine.map((lock) => holderHere(lock, now, { shared: lock.shared })), ...elsewhere],
      waiting: info.waiting === undefined ? undefined : info.waiting + waiting + (serverSeen ? 0 : asking),
      waitingHere: info.waitingHere + waiting + asking,
    };
  }

  /** `hold-here`: a caller of this process holds `lock` in its transaction (until `letGo`, after COMMIT or ROLLBACK). */
  private holdHere(lock: TransactionLock, state: TransactionState): void {
    state.locks.push(lock);
    const held = this.granted.get(lock.key);
    if (held) held.add(lock);
    else this.granted.set(lock.key, new Set([lock]));
  }

  /** `let-go`: its transaction ended. */
  private letGo(lock: TransactionLock): void {
    const held = this.granted.get(lock.key);
    if (!held?.delete(lock) || held.size > 0) return;
    this.granted.delete(lock.key);
  }

  /** Graceful shutdown of the local queue (running sections finish first, up to `shutdownGraceMs`). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.local.stopTaking();
  }

  onApplicationShutdown(): void {
    this.local.clearTimers();
  }

  private async inTransaction<T>(
    host: TransactionHostLike,
    /** The places in this process's lines, one per key, in the keys' order. */
    locals: readonly InMemoryLock[],
    options: TransactionRunOptions,
    waitTimeoutMs: number,
    startedAt: number,
    joined: boolean,
    section: (locks: readonly Lock[]) => Promise<T> | T,
    state: TransactionState,
  ): Promise<T> {
    const tx = host.tx;
    const query = this.settings.query ?? recognisedQuery(tx);
    if (!query) {
      throw new SerializedConfigError([
        `transaction mode (${options.handler ?? 'LockService#run'}) cannot send a statement through the transaction object of the app's adapter; ` +
          'pass SerializedModule.forRoot({ transaction: { query: (tx, sql, params) => rows } })',
      ]);
    }
    // Watched from the lock statement on: a connection that dies keeps the listener, so the
    // late 'error' event of a checked-out pg client (nobody else listens) cannot crash the app.
    const connection = connectionOf(tx);
    const locks: TransactionLock[] = [];
    let dead = false;
    const lost = (error?: unknown) => {
      dead = true;
      for (const lock of locks) lock.markLost("the transaction's connection ended", error);
    };
    connection?.on('end', lost);
    connection?.on('error', lost);
    try {
      await this.lockAll(query, tx, locals, options, waitTimeoutMs, startedAt, joined, locks).catch((error: unknown) => {
        // A caller that gave up leaves its connection alive; an error without an SQL state may mean it is gone.
        if (sqlStateOf(error) === undefined && !(options.signal?.aborted && error === options.signal.reason)) dead = true;
        throw error;
      });
      if (dead) for (const lock of locks) lock.markLost("the transaction's connection ended");
      for (const lock of locks) this.holdHere(lock, state);
      state.phase = Phase.Section;
      const result = await section(locks);
      state.phase = Phase.Returned;
      return result;
    } catch (error) {
      if (state.phase === Phase.Section) state.sectionError = error;
      throw error;
    } finally {
      const off = (connection?.off ?? connection?.removeListener)?.bind(connection);
      if (!dead) {
        off?.('end', lost);
        off?.('error', lost);
      }
    }
  }

  /**
   * The isolation check (or setting), then the lock statement of each key in `tx`,
   * in order, each bounded by what is left of `waitTimeoutMs`; `locks` receives
   * them as granted. Several keys in a joined transaction are taken after a
   * savepoint, rolled back to on a failure so that no key stays held.
   */
  private async lockAll(
    query: TransactionQuery,
    tx: unknown,
    locals: readonly InMemoryLock[],
    options: TransactionRunOptions,
    waitTimeoutMs: number,
    startedAt: number,
    joined: boolean,
    locks: TransactionLock[],
  ): Promise<void> {
    const key = locals[0].key;
    try {
      if (joined) {
        const [row] = await query(tx, this.statements.isolation, []);
        const isolation = String(row?.isolation ?? 'read committed');
        if (isolation !== 'read committed') throw new TransactionIsolationError(key, isolation, options.handler);
      } else {
        await query(tx, this.statements.readCommitted, []);
      }
    } catch (error) {
      throw this.lockError(key, error, waitTimeoutMs, 'the lock statement failed');
    }
    const savepoint = joined && locals.length > 1;
    if (savepoint)
      await query(tx, SET_SAVEPOINT, []).catch((error: unknown) =>
        Promise.reject(this.lockError(key, error, waitTimeoutMs, 'the savepoint failed')),
      );
    try {
      for (const local of locals) locks.push(await this.lock(query, tx, local, options, waitTimeoutMs, startedAt, joined));
    } catch (error) {
      if (savepoint) await query(tx, ROLLBACK_TO_SAVEPOINT, []).catch(() => undefined);
      locks.length = 0;
      throw error;
    }
    if (savepoint)
      await query(tx, RELEASE_SAVEPOINT, []).catch((error: unknown) =>
        Promise.reject(this.lockError(key, error, waitTimeoutMs, 'the savepoint failed')),
      );
  }

  /**
   * The lock statements of `local`'s key in `tx`: the lock, granted, with its token;
   * or the error the caller gets. A try first (the token with it); when another
   * session holds the key, the caller counts as a waiter of this process
   * (`maxPending`) and a second statement waits for it, bounded by what is left of
   * `waitTimeoutMs`.
   */
  private async lock(
    query: TransactionQuery,
    tx: unknown,
    local: InMemoryLock,
    options: TransactionRunOptions,
    waitTimeoutMs: number,
    startedAt: number,
    joined: boolean,
  ): Promise<TransactionLock> {
    const key = local.key;
    const advisoryKey = advisoryLockKey(this.settings.keyPrefix, key);
    const statements = options.shared === true ? this.statements.shared : this.statements;
    const signal = options.signal;
    // A wait in a transaction begun here ends when the caller gives up: the server cancels the statement. In
    // the app's own transaction a cancel would fail the app's transaction: its wait ends with waitTimeoutMs.
    const cancel = options.mode !== 'reject' && !joined && signal ? statementCancel(tx) : undefined;
    let cancelled: Promise<void> | undefined;
    const onAbort = cancel && ((): void => void (cancelled = cancel()));
    if (onAbort) signal!.addEventListener('abort', onAbort, { once: true });
    let rows: readonly Record<string, unknown>[];
    try {
      rows = await query(tx, statements.tryLock, [advisoryKey]);
      if (options.mode !== 'reject' && !signal?.aborted && (rows[0]?.token === null || rows[0]?.token === undefined)) {
        const refused = this.local.holderWaitsBehind(local, options.maxPending ?? this.settings.maxPending);
        if (refused) throw refused;
        const remainingMs = waitTimeoutMs - (performance.now() - startedAt);
        rows = await query(tx, statements.lock, [advisoryKey, lockTimeoutOf(remainingMs)]);
        this.local.holderArrived(local);
      }
    } catch (error) {
      // Cancelled (or failed) after the caller gave up: it gets its reason, once the cancel reached the server.
      if (signal?.aborted) throw await abandoned(signal, cancelled);
      throw this.lockError(key, error, waitTimeoutMs, 'the lock statement failed');
    } finally {
      if (onAbort) signal!.removeEventListener('abort', onAbort);
    }
    // A caller that gave up as the lock came: the transaction rolls back, after the cancel (if any) reached the server.
    if (signal?.aborted) throw await abandoned(signal, cancelled);
    const token = rows[0]?.token;
    if (token === null || token === undefined) throw new LockBusyError(key, 'held');
    return new TransactionLock(key, BigInt(String(token)), Number(rows[0]?.pid), joined, options.shared === true);
  }

  /** An error before the section ran, as the caller sees it: 429 for a wait that ran out, 503 for the backend. */
  private lockError(key: string, error: unknown, waitTimeoutMs: number, what: string): unknown {
    if (error instanceof SerializedError || error instanceof SerializedConfigError || error instanceof TransactionIsolationError)
      return error;
    if (sqlStateOf(error) === LOCK_NOT_AVAILABLE) return new LockTimeoutError(key, waitTimeoutMs, undefined, { reason: 'key-held' });
    return new LockBackendError(`Transaction mode: ${what}: ${describe(error)}`, { key, cause: error });
  }

  /** Creates the fencing sequence once per host when missing (`postgres.createSchema`), in a transaction of its own. */
  private sequenceOf(host: TransactionHostLike, key: string): Promise<void> {
    if (!this.settings.createSchema) return Promise.resolve();
    let ready = this.sequences.get(host);
    if (!ready) {
      ready = this.createSequence(host).catch((error: unknown) => {
        this.sequences.delete(host);
        throw new LockBackendError(`Transaction mode: could not create the fencing sequence: ${describe(error)}`, { key, cause: error });
      });
      this.sequences.set(host, ready);
    }
    return ready;
  }

  private async createSequence(host: TransactionHostLike): Promise<void> {
    const propagation = this.hosts.module('transaction mode').Propagation.RequiresNew;
    await host
      .withTransaction(propagation, async () => {
        const query = this.settings.query ?? recognisedQuery(host.tx);
        if (!query) return; // reported by the first call, with its handler
        try {
          await query(host.tx, this.statements.createSequence, []);
        } catch (error) {
          if (!isAlreadyCreated(error)) throw error;
        }
      })
      .catch((error: unknown) => {
        if (!isAlreadyCreated(error)) throw error;
      });
  }
}

/**
 * How the statement running on `tx`'s connection is cancelled, when that connection is
 * a pg client (TypeORM, Drizzle over pg): the protocol's CancelRequest on a socket of
 * its own, no pool slot. A cancel that arrives after the statement ended is dropped by
 * the server while it waits for the next command, so it cannot hit another statement
 * once `abandoned` has waited for it.
 */
function statementCancel(tx: unknown): (() => Promise<void>) | undefined {
  const target = cancelTargetOf(connectionOf(tx));
  return target && (() => sendCancelRequest(target, CANCEL_DELIVERY_MS));
}

/** The reason of a caller that gave up, once its cancel (if one was sent) was delivered. */
async function abandoned(signal: AbortSignal, cancelled: Promise<void> | undefined): Promise<unknown> {
  await cancelled;
  return signal.reason;
}

function describe(error: unknown): string {
  return redactUrls(String((error as Error)?.message ?? error));
}

/**
 * `LockService.run` with `transaction`: the option checked, then {@link TransactionLocks.run};
 * `failed` sees an error that came before the section ran (`transactions` is absent on a
 * LockService made without `SerializedModule`).
 */
export function runInTransaction<T>(
  transactions: TransactionLocks | undefined,
  key: string,
  options: Omit<TransactionRunOptions, 'transaction'> & { transaction?: TransactionOption },
  section: (lock: Lock) => Promise<T> | T,
  failed: (error: unknown) => never,
): Promise<T>;
/** {@link runInTransaction} for a key set: `keys` distinct, in canonical order. */
export function runInTransaction<T>(
  transactions: TransactionLocks | undefined,
  keys: readonly string[],
  options: Omit<TransactionRunOptions, 'transaction'> & { transaction?: TransactionOption },
  section: (locks: readonly Lock[]) => Promise<T> | T,
  failed: (error: unknown) => never,
): Promise<T>;
export function runInTransaction<T>(
  transactions: TransactionLocks | undefined,
  key: string | readonly string[],
  options: Omit<TransactionRunOptions, 'transaction'> & { transaction?: TransactionOption },
  section: ((lock: Lock) => Promise<T> | T) | ((locks: readonly Lock[]) => Promise<T> | T),
  failed: (error: unknown) => never,
): Promise<T> {
  const where = options.handler ?? 'LockService#run';
  const problem = transactionOptionProblem(options.transaction);
  if (problem) return Promise.reject(new TypeError(`${problem} (in ${where})`));
  if (!transactions) return Promise.reject(new Error(`transaction mode (${where}) needs the LockService of SerializedModule.forRoot()`));
  let began = false;
  // The section receives what the call takes: a lock, or the locks of a set.
  const enter = (taken: Lock | readonly Lock[]) => {
    began = true;
    return (section as (taken: Lock | readonly Lock[]) => Promise<T> | T)(taken);
  };
  const ran =
    typeof key === 'string'
      ? transactions.run(key, options as TransactionRunOptions, enter)
      : transactions.runSet(key, options as TransactionRunOptions, enter);
  return ran.catch((error: unknown) => (began ? Promise.reject(error) : failed(error)));
}
