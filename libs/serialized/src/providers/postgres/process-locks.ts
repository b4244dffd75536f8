import { performance } from 'node:perf_hooks';
import type { HandOffMode, ProviderAcquireOptions } from '../../acquire-options.interface';
import { LockBackendError, LockBusyError, LockLostError, LockTimeoutError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline-queue';
import { HeldLocks } from '../../internal/held-locks';
import { KeyedWaitQueue } from '../../internal/keyed-wait-queue';
import { PendingBudget } from '../../internal/pending-budget';
import type { Lock } from '../../lock.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { advisoryLockKey } from './advisory-key.hash';
import type { Cohort } from './handoff-cohort';
import { checkSession } from './held-session';
import { LocalHandoffs } from './local-handoff';
import { LockAttempt, type AttemptOwner, type AttemptRequest } from './lock.attempt';
import type { LockConnection, UnownedLock } from './lock-connection';
import type { LockSessions } from './lock-sessions';
import { PostgresLock, type PostgresLockOwner } from './postgres-lock';
import type { PostgresLockProviderOptions } from './postgres-lock-provider.options';
import { SessionAudit } from './session-audit';
import { SessionLivenessMonitor } from './session-liveness.monitor';

const KEY_HELD_HERE = 'key held (or asked for by an earlier caller of this process)';
const NO_LONGER_WATCHED =
  'the provider shut down past its grace period and stopped watching its PostgreSQL session (the session keeps the lock until release)';

/**
 * What one provider's process holds, waits for and asks the server for, per key —
 * and the only writer of it: the local FIFO of callers (`queue`), the holders
 * (`held`), the attempt in flight per key (`attempts`), the releases on their way
 * (`releasing`). Attempts, held locks and local hand-offs report to it; it decides
 * what happens next to the key. Shutting down winds down exactly this state.
 */
export class ProcessLocks implements AttemptOwner, PostgresLockOwner {
  private readonly queue: KeyedWaitQueue;
  private readonly held = new HeldLocks<PostgresLock>();
  private readonly attempts = new Map<string, LockAttempt>();
  /** Releases of this process on their way to the server, by key (a try of the key waits for its own). */
  private readonly releasing = new Map<string, Promise<void>>();
  private readonly handoffs: LocalHandoffs;
  private readonly monitor: SessionLivenessMonitor;
  private readonly audit: SessionAudit;
  private readonly waitTimeoutMs: number;
  private readonly maxPending: number;
  private readonly shutdownGraceMs: number;

  /** @throws Error when `handoff` or `maxLocalHandOffs` is invalid */
  constructor(
    private readonly sessions: LockSessions,
    private readonly keyPrefix: string,
    options: PostgresLockProviderOptions,
    pingEveryMs: number,
    deadlines: DeadlineQueue,
    log: { warn(message: string): void; error(message: string): void },
  ) {
    this.queue = new KeyedWaitQueue(deadlines, new PendingBudget(options.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal));
    this.waitTimeoutMs = options.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.maxPending = options.maxPending ?? SERIALIZED_DEFAULTS.maxPending;
    this.shutdownGraceMs = options.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs;
    this.handoffs = new LocalHandoffs(
      sessions,
      {
        waiting: (key) => this.queue.waiting(key),
        closing: () => this.held.closing,
        passTurn: (key) => void this.queue.release(key),
        forget: (lock) => this.forget(lock),
        grant: (key, token, lockKey, connection, cohort, handoffs) => this.grant(key, token, lockKey, connection, cohort, handoffs),
      },
      options,
      log.warn,
    );
    this.audit = new SessionAudit(sessions.pool, (connection) => this.ownedOn(connection), log.error);
    this.monitor = new SessionLivenessMonitor(() => sessions.pool.shareable(), () => this.held.size > 0, (connection) => this.audit.session(connection), pingEveryMs);
  }

  /** Keys held or waited for in this process (0 when idle). */
  get activeKeys(): number {
    return this.queue.size;
  }

  /** Whether the liveness checks' timer runs. */
  get armed(): boolean {
    return this.monitor.armed;
  }

  /** Waits for `key` here (FIFO), then on the server; see `PostgresLockProvider`. */
  acquire(key: string, options: ProviderAcquireOptions): Promise<Lock> {
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
    const attempt: AttemptRequest = { mode: 'wait', waitTimeoutMs, startedAt, signal, maxPending, handoff: options.handoff };
    // Uncontended in this process: straight to the server, no extra promise in between.
    if (!waiting) return this.lockOnServer(key, attempt) as Promise<Lock>;
    return waiting.then(() => {
      const handed = this.handoffs.take(key);
      // Handed over in the same tick the caller gave up (or shutdown began): pass it on.
      if (signal?.aborted || this.held.closing) {
        if (handed) this.handoffs.passOn(handed);
        else this.queue.release(key);
        throw signal?.aborted ? signal.reason : LockBackendError.shuttingDown(key);
      }
      return (handed && this.handoffs.grant(handed, options.handoff)) || (this.lockOnServer(key, attempt) as Promise<Lock>);
    });
  }

  /** Takes `key` only if nobody here holds or waits for it and the server grants it at once. */
  async tryAcquire(key: string, options: ProviderAcquireOptions): Promise<Lock | null> {
    this.assertUsable(key);
    if (options.signal?.aborted) throw options.signal.reason;
    // This process's own release of the key is on its way (run() does not wait for it): a caller that
    // saw the section end must find the key free, so the try waits for that release — unless someone waits.
    const releasing = this.releasing.get(key);
    if (releasing && this.queue.waiting(key) === 0) await releasing.catch(() => undefined);
    if (!this.queue.tryTake(key)) return null;
    const attempt: AttemptRequest = {
      mode: 'try',
      waitTimeoutMs: options.waitTimeoutMs ?? this.waitTimeoutMs,
      startedAt: performance.now(),
      signal: options.signal,
      maxPending: Infinity,
      handoff: options.handoff,
    };
    return this.lockOnServer(key, attempt);
  }

  /** A server grant (no `cohort`: a new run starts) or a local hand-off makes the caller a holder. */
  grant(key: string, fencingToken: bigint, lockKey: string, connection: LockConnection, from?: Cohort | HandOffMode, handoffs = 0): PostgresLock {
    const cohort = typeof from === 'object' ? from : this.handoffs.cohortOf(connection, from);
    const lock = new PostgresLock(key, fencingToken, lockKey, connection, this, cohort, handoffs);
    this.held.add(lock);
    // A session that ended on the way tells the lock at once (its holders were told when it went).
    connection.hold(lock);
    this.monitor.arm();
    return lock;
  }

  attemptDone(attempt: LockAttempt, held: boolean): void {
    if (this.attempts.get(attempt.key) === attempt) this.attempts.delete(attempt.key);
    // Only now may the next caller of this key in this process go to the server.
    if (!held) this.queue.release(attempt.key);
  }

  attemptBlocked(attempt: LockAttempt): LockBusyError | undefined {
    // Its caller now waits too: callers queued here beyond their bound, counting it, are one too many.
    this.queue.refuseSurplus(attempt.key, 1);
    if (attempt.maxPending >= 1) return undefined;
    return new LockBusyError(attempt.key, 'max-pending', { maxPending: attempt.maxPending });
  }

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

  checkLock(lock: PostgresLock): Promise<void> {
    return checkSession(lock);
  }

  /** Audits every lock session now; resolves with the advisory locks found without an owner (given back). */
  auditAll(): Promise<UnownedLock[]> {
    return this.audit.all();
  }

  /** Refuses newcomers, rejects waiters (local and in the server) and waits for holders up to the grace period. */
  async stopTaking(): Promise<void> {
    this.held.close();
    const closing = (key: string) => LockBackendError.shuttingDown(key);
    this.queue.rejectAll(closing);
    for (const attempt of [...this.attempts.values()]) attempt.abort(closing(attempt.key));
    await this.held.drain(this.shutdownGraceMs);
  }

  /** Stops the session checks and closes the lock pool; locks still held keep their sessions until release. */
  async close(): Promise<void> {
    this.held.close();
    this.monitor.stop();
    // Nothing watches the sessions still held past the grace period any more (and
    // they no longer keep the process alive): their holders are told now.
    for (const lock of [...this.held.values()]) if (!lock.released) lock.markLost(new LockLostError(lock.key, NO_LONGER_WATCHED));
    // Aborted waits end their sessions as soon as the server answers the cancel.
    await Promise.race([
      Promise.all([...this.attempts.values()].map((attempt) => attempt.done)),
      new Promise((resolve) => setTimeout(resolve, this.sessions.connectTimeoutMs).unref()),
    ]);
    // Sessions still held past the grace period stay until their holders release
    // them, without keeping the process alive.
    for (const lock of this.held.values()) lock.connection.unref();
    await this.sessions.pool.close();
  }

  private assertUsable(key: string): void {
    this.held.assertOpen(key);
    this.sessions.assertUsable(key);
  }

  private lockOnServer(key: string, request: AttemptRequest): Promise<PostgresLock | null> {
    const attempt = new LockAttempt(this.sessions, this, key, advisoryLockKey(this.keyPrefix, key), request);
    this.attempts.set(key, attempt);
    attempt.start();
    return attempt.promise;
  }

  /** A holder released or handed on: forgotten, and the key's turn passes here. */
  private forget(lock: PostgresLock): void {
    this.held.delete(lock);
    this.queue.release(lock.key);
  }

  /** Asked when an audit statement is sent: the lock keys of `connection` someone here stands behind. */
  private ownedOn(connection: LockConnection): Set<string> {
    const owned = this.handoffs.handedOn(connection);
    for (const lock of this.held.values()) if (lock.connection === connection) owned.add(lock.lockKey);
    // An attempt owns its key on any session: it may be between statements or winding down.
    for (const attempt of this.attempts.values()) owned.add(attempt.lockKey);
    return owned;
  }
}
