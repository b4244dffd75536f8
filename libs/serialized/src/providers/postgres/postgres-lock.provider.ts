import type { HandOffMode } from '../../acquire-options.interface';
import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import type { ProviderAcquireOptions } from '../../acquire-options.interface';
import { validateAcquire } from '../../config/acquire-options.validator';
import { redactUrls } from '../../internal/redact';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../errors';
import { DeadlineQueue } from '../../internal/deadline-queue';
import { HeldLocks } from '../../internal/held-locks';
import { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import { KeyedWaitQueue } from '../../internal/keyed-wait-queue';
import { PendingBudget } from '../../internal/pending-budget';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import { postgresProviderOptions } from '../../config/provider-options.mapper';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { advisoryLockKey } from './advisory-key.hash';
import { LockAttempt, type AttemptMode } from './lock.attempt';
import { lockClientConfig } from './lock-client.config';
import type { LockConnection, LockSessionSettings } from './lock-connection';
import { LockConnectionPool } from './lock-connection.pool';
import { openLockSession } from './lock-session.opener';
import { loadPgDriver } from './pg-driver.loader';
import { PostgresLock } from './postgres-lock';
import { pingLockPool } from './postgres-health';
import { keepingProcessAlive } from '../../internal/process-keep-alive';
import { QueryWatchdog } from './query.watchdog';
import { lockStatements, type LockStatements } from './postgres-lock.statements';
import { SessionChangedError } from './session-changed.error';
import { SessionLivenessMonitor } from './session-liveness.monitor';
import { checkSession } from './held-session';
import { LocalHandoffs, type Cohort } from './local-handoff';
import { closeLockSessions, stopTakingLocks } from './postgres-lock.shutdown';
import { SessionAudit } from './session-audit';
import { lockApplicationName, lockPoolSizeOf, sessionTimings, type PostgresLockProviderOptions } from './postgres-lock-provider.options';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { PostgresIdempotencyStore } from '../../idempotency/stores/postgres-idempotency.store';

export type { PostgresLockProviderOptions } from './postgres-lock-provider.options';

/**
 * Locks shared by every process using one PostgreSQL database: session-level
 * advisory locks on a small pool of connections the library owns.
 *
 * Two levels: callers of one key first queue in this process (strict FIFO), and
 * only the head tries the key in PostgreSQL (`pg_try_advisory_lock`, on a session
 * other keys' locks share). Only when another session holds the key does the head
 * take a session of its own and wait in PostgreSQL's lock queue, bounded there by
 * `lock_timeout`. So a held lock costs no connection of its own, at most one
 * connection per key and process waits, and a full pool makes callers queue, not
 * fail (a wait that runs out there has `LockTimeoutError#reason` `no-connection`).
 *
 * Held sessions are pinged; a session that ends (terminated backend, closed socket,
 * server restart, or a path silent for `sessionTimeoutMs`) aborts the `signal` of
 * every lock it held with `LockLostError`. A slow path is not a lost session.
 *
 * See docs/providers/postgres.md.
 */
// Only public interfaces after `implements`: the package's .d.ts must not name the
// internal ones (their members are stripped from it). The provider is still each
// of them: it is passed as the host of its attempts, locks, hand-offs and shutdown.
export class PostgresLockProvider extends LockProvider implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource {
  /** Diagnostics: the lock sessions' `application_name` (count them in `pg_stat_activity`). */
  readonly applicationName: string;
  readonly keyPrefix: string;
  /** @internal */
  readonly pool: LockConnectionPool;
  /** @internal */
  readonly statements: LockStatements;
  /** @internal */
  readonly connectTimeoutMs: number;
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  /** @internal */
  readonly deadlines = new DeadlineQueue();
  /** @internal */
  readonly queue: KeyedWaitQueue;
  /** @internal */
  readonly held = new HeldLocks<PostgresLock>();
  private readonly leaseNote = new IgnoredLeaseNote(
    this.logger,
    'PostgresLockProvider',
    "a session lock lasts as long as its session; the provider's own leaseMs sets how often held sessions are checked",
  );
  /** @internal */
  readonly attempts = new Map<string, LockAttempt>();
  /** @internal */
  readonly monitor: SessionLivenessMonitor;
  /** @internal */
  readonly handoffs: LocalHandoffs;
  private readonly audit: SessionAudit;
  private readonly watchdog: QueryWatchdog;
  private readonly settings: LockSessionSettings;
  private readonly waitTimeoutMs: number;
  private readonly maxPending: number;
  /** @internal */
  readonly shutdownGraceMs: number;
  private readonly idempotencyTable: string | undefined;
  private refusal: SessionChangedError | undefined;
  /** Releases of this process on their way to the server, by key (a try of the key waits for its own). */
  private readonly releasing = new Map<string, Promise<void>>();
  private shutDown: Promise<void> | undefined;

  /** @throws Error when `pg` is not installed, or an option is invalid */
  constructor(options: PostgresLockProviderOptions = {}) {
    super();
    this.queue = new KeyedWaitQueue(this.deadlines, new PendingBudget(options.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal));
    const pg = loadPgDriver();
    this.keyPrefix = options.keyPrefix ?? SERIALIZED_DEFAULTS.keyPrefix;
    const timings = sessionTimings(options);
    this.waitTimeoutMs = options.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.maxPending = options.maxPending ?? SERIALIZED_DEFAULTS.maxPending;
    this.connectTimeoutMs = options.connectTimeoutMs ?? SERIALIZED_DEFAULTS.connectTimeoutMs;
    this.shutdownGraceMs = options.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs;
    this.applicationName = lockApplicationName(options, this.keyPrefix);
    this.statements = lockStatements(options.fencingSequence ?? SERIALIZED_DEFAULTS.pgFencingSequence);
    this.idempotencyTable = options.idempotencyTable;
    this.handoffs = new LocalHandoffs(this, options, (message) => this.logger.warn(redactUrls(message)));
    this.settings = {
      pg,
      config: lockClientConfig(options),
      applicationName: this.applicationName,
      connectTimeoutMs: this.connectTimeoutMs,
      sessionTimeoutMs: timings.sessionTimeoutMs,
      keepaliveSeconds: timings.keepaliveSeconds,
      sequence: this.statements.sequence,
      createSchema: options.createSchema ?? true,
    };
    this.pool = new LockConnectionPool(
      {
        size: lockPoolSizeOf(options),
        open: () => openLockSession(this.settings, this.watchdog, (error) => this.refuse(error)),
        idleTimeoutMs: options.idleTimeoutMs ?? SERIALIZED_DEFAULTS.pgIdleTimeoutMs,
        retryAfterFailureMs: Math.min(1000, this.connectTimeoutMs),
        closeTimeoutMs: this.connectTimeoutMs,
      },
      this.deadlines,
    );
    this.audit = new SessionAudit(this, (message) => this.logger.error(redactUrls(message)));
    this.monitor = new SessionLivenessMonitor(() => this.pool.shareable(), () => this.held.size > 0, (connection) => this.audit.session(connection), timings.pingEveryMs);
    this.watchdog = new QueryWatchdog(250);
  }

  /** Builds the provider `SerializedModule` registers for `driver: 'postgres'`. */
  static fromModuleOptions(options: ResolvedSerializedOptions): PostgresLockProvider {
    return new PostgresLockProvider(postgresProviderOptions(options));
  }

  /** `@Idempotent`'s records: a table of this database, reached through a small pool of their own. */
  createIdempotencyStore(): IdempotencyStore {
    return new PostgresIdempotencyStore({ ...this.settings, keyPrefix: this.keyPrefix, table: this.idempotencyTable });
  }

  /** Health: one statement on a lock connection, bounded by `timeoutMs` (see `pingLockPool`). */
  override ping(timeoutMs: number): Promise<void> {
    if (this.shutDown) return Promise.reject(LockBackendError.shuttingDown());
    return pingLockPool(this.pool, timeoutMs);
  }

  /** Diagnostics (for tests and health checks): keys held or waited for in this process (0 when idle). */
  get activeKeys(): number {
    return this.queue.size;
  }

  /**
   * Diagnostics (for tests and operators): checks every lock session against the
   * server now. Each advisory lock PostgreSQL shows for a session of this provider
   * must belong to a holder, a hand-off or an attempt of this provider; one that
   * does not is released at once and logged as an error. Resolves with how many
   * were found (0 is the invariant). The liveness checks run the same audit on
   * every session while locks are held.
   */
  async auditLocks(): Promise<number> {
    return (await this.audit.all()).length;
  }

  /** Lock connections open or opening. */
  get connections(): number {
    return this.pool.total;
  }

  /** Diagnostics: whether a timer is armed (none when nothing is held or waited for). */
  get timerArmed(): boolean {
    return this.deadlines.armed || this.monitor.armed || this.watchdog.armed;
  }

  acquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock> {
    const invalid = validateAcquire(key, options, 'PostgresLockProvider#acquire');
    if (invalid) return Promise.reject(invalid);
    this.leaseNote.check(options.leaseMs, key);
    try {
      this.assertUsable(key);
    } catch (error) {
      return Promise.reject(error);
    }
    const startedAt = performance.now();
    const waitTimeoutMs = options.waitTimeoutMs ?? this.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.maxPending;
    const signal = options.signal;
    const waiting = this.queue.take(key, {
      timeoutMs: waitTimeoutMs,
      signal,
      // The caller becoming the holder is not a waiter; the head waiting in
      // PostgreSQL behind another session is one (`attemptBlocked`).
      maxPending: this.attempts.get(key)?.blocked ? maxPending - 1 : maxPending,
      timeoutError: () => new LockTimeoutError(key, waitTimeoutMs, undefined, { reason: 'key-held', message: KEY_HELD_HERE }),
      busyError: () => new LockBusyError(key, 'max-pending', { maxPending }),
    });
    // Uncontended in this process: straight to the server, no extra promise in between.
    if (!waiting) return this.lockOnServer(key, 'wait', waitTimeoutMs, startedAt, signal, maxPending, options.handoff) as Promise<Lock>;
    return waiting.then(() => {
      const handed = this.handoffs.take(key);
      // Handed over in the same tick the caller gave up (or shutdown began): pass it on.
      if (signal?.aborted || this.held.closing) {
        if (handed) this.handoffs.passOn(handed);
        else this.queue.release(key);
        throw signal?.aborted ? signal.reason : LockBackendError.shuttingDown(key);
      }
      return (handed && this.handoffs.grant(handed, options.handoff)) || (this.lockOnServer(key, 'wait', waitTimeoutMs, startedAt, signal, maxPending, options.handoff) as Promise<Lock>);
    });
  }

  /**
   * Takes `key` only if nobody in this process holds or waits for it and PostgreSQL
   * grants it at once. A full pool is not a busy key: it waits for room up to
   * `waitTimeoutMs` (then `LockTimeoutError`, reason `no-connection`).
   */
  async tryAcquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock | null> {
    const invalid = validateAcquire(key, options, 'PostgresLockProvider#tryAcquire');
    if (invalid) throw invalid;
    this.leaseNote.check(options.leaseMs, key);
    this.assertUsable(key);
    if (options.signal?.aborted) throw options.signal.reason;
    // This process's own release of the key is on its way (run() does not wait for it): a caller that
    // saw the section end must find the key free, so the try waits for that release — unless someone waits.
    const releasing = this.releasing.get(key);
    if (releasing && this.queue.waiting(key) === 0) await releasing.catch(() => undefined);
    if (!this.queue.tryTake(key)) return null;
    return this.lockOnServer(key, 'try', options.waitTimeoutMs ?? this.waitTimeoutMs, performance.now(), options.signal, Infinity, options.handoff);
  }

  beforeApplicationShutdown(): Promise<void> {
    return keepingProcessAlive(() => stopTakingLocks(this));
  }

  /**
   * Stops the session checks and closes the lock connections; a lock held past the
   * grace period keeps its session until release, without keeping the process alive.
   */
  onApplicationShutdown(): Promise<void> {
    return (this.shutDown ??= keepingProcessAlive(() => closeLockSessions(this)));
  }

  /** Shuts down outside Nest (waiters rejected, holders awaited up to the grace period); a script may end with it. */
  async close(): Promise<void> {
    await this.beforeApplicationShutdown();
    await this.onApplicationShutdown();
  }

  /** @internal */
  backendError(key: string, cause: unknown): LockBackendError {
    const reason = redactUrls(cause instanceof Error ? cause.message : String(cause));
    return new LockBackendError(`PostgreSQL cannot be used for locks: ${reason}`, { key, cause });
  }

  /** @internal */
  grant(key: string, fencingToken: bigint, lockKey: string, connection: LockConnection, from?: Cohort | HandOffMode, handoffs = 0): PostgresLock {
    const cohort = typeof from === 'object' ? from : this.handoffs.cohortOf(connection, from);
    const lock = new PostgresLock(key, fencingToken, lockKey, connection, this, cohort, handoffs);
    this.held.add(lock);
    // A session that ended on the way tells the lock at once (its holders were told when it went).
    connection.hold(lock);
    this.monitor.arm();
    return lock;
  }

  /** @internal */
  attemptDone(attempt: LockAttempt, held: boolean): void {
    if (this.attempts.get(attempt.key) === attempt) this.attempts.delete(attempt.key);
    // Only now may the next caller of this key in this process go to the server.
    if (!held) this.queue.release(attempt.key);
  }

  /** @internal */
  attemptBlocked(attempt: LockAttempt): LockBusyError | undefined {
    // Its caller now waits too: callers queued here beyond their bound, counting it, are one too many.
    this.queue.refuseSurplus(attempt.key, 1);
    if (attempt.maxPending >= 1) return undefined;
    return new LockBusyError(attempt.key, 'max-pending', { maxPending: attempt.maxPending });
  }

  /** @internal */
  refuse(error: SessionChangedError): void {
    if (!this.refusal) this.logger.error(redactUrls(error.message));
    this.refusal ??= error;
  }

  /** @internal */
  releaseLock(lock: PostgresLock): Promise<void> {
    const releasing = this.handoffs.release(lock);
    // A try of this key waits for it (see tryAcquire); a local hand-off is done at once.
    if (this.queue.isHeld(lock.key)) {
      this.releasing.set(lock.key, releasing);
      const forget = () => void (this.releasing.get(lock.key) === releasing && this.releasing.delete(lock.key));
      releasing.then(forget, forget);
    }
    return releasing;
  }

  /** @internal */
  checkLock(lock: PostgresLock): Promise<void> {
    return checkSession(lock);
  }

  private assertUsable(key: string): void {
    this.held.assertOpen(key);
    if (this.refusal) throw this.backendError(key, this.refusal);
  }

  // prettier-ignore
  private lockOnServer(key: string, mode: AttemptMode, waitTimeoutMs: number, startedAt: number, signal: AbortSignal | undefined, maxPending = Infinity, handoff?: HandOffMode): Promise<PostgresLock | null> {
    const attempt = new LockAttempt(this, key, advisoryLockKey(this.keyPrefix, key), mode, waitTimeoutMs, startedAt, signal);
    [attempt.maxPending, attempt.handoff] = [maxPending, handoff];
    this.attempts.set(key, attempt);
    attempt.start();
    return attempt.promise;
  }
}

const KEY_HELD_HERE = 'key held (or asked for by an earlier caller of this process)';
