import type { HandOffMode } from '../../acquire-options.interface';
import { LockLostError, LockTimeoutError } from '../../errors';
import type { LineCaller } from '../../local/line.caller';
import type { LockBackend } from '../../local/lock-backend.interface';
import type { LockLines } from '../../local/lock.lines';
import type { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { advisoryLockKey } from './advisory-key.hash';
import { checkSession, KEPT, unlockBesideSession, unlockSession } from './session.unlock';
import { holdShapeOf } from './hold.shape';
import { ShapedLockAttempt } from './shaped-lock.attempt';
import { slotKeyOf } from './lock.session';
import { LockAttempt } from './lock.attempt';
import { SessionAttempts } from '../sessions/session-attempts.registry';
import { closeSessionBackend } from '../sessions/session-backend.shutdown';
import type { LockSession, UnownedLock } from './lock.session';
import type { LockSessions } from './lock.sessions';
import { PostgresLock, type HandOffRun } from './postgres.lock';
import { SessionAudit } from './session.audit';
import { SessionChangedError } from './session-changed.error';
import { performance } from 'node:perf_hooks';
import { SessionLivenessMonitor } from '../sessions/session-liveness.monitor';

/** A server lock on its way from a releasing holder to the next caller of this process (a local hand-off). */
export interface HandedLock {
  readonly key: string;
  readonly lockKey: string;
  readonly session: LockSession;
  /** The token the next holder takes: reserved from the session's block when the holder let go. */
  readonly token: bigint;
  readonly handOffRun: HandOffRun;
}

/** What the backend tells the provider's lines (the layer) of its own events, and asks of them. */
type PostgresLines = Pick<LockLines<PostgresLock, HandedLock>, 'waitsBehind' | 'heldCount' | 'released'>;

const KEY_HELD_HERE = 'key held (or asked for by an earlier caller of this process)';
/**
 * The PostgreSQL backend: session-level advisory locks on the sessions of the
 * library's own pool. The layer lets one caller per key and process ask at a time
 * (`LockAttempt`: a try on a shared session, then a wait in the server's queue on
 * a session of its own); a release hands the key on in-process when the layer
 * allows and the session's token block lasts (lock cohorting, Dice, Marathe &
 * Shavit, PPoPP 2012) — `strict` only when no other session waits in the server
 * (one statement that unlocks if one does), `cohort` up to the layer's bound —
 * and otherwise unlocks, with every result checked.
 */
export class PostgresBackend implements LockBackend<PostgresLock, HandedLock> {
  private readonly attempts = new SessionAttempts<LockSession, LockAttempt | ShapedLockAttempt>();
  /** The lock keys of key sets whose statement is in flight (`takeSet`): owned, for the session audit. */
  private readonly settingKeys = new Set<string>();
  /** Keys may have several holders at once (`shared`, `concurrency` > 1): see `ShapedLockAttempt`. */
  readonly holdsTogether = true;
  private readonly mode: HandOffMode;
  private readonly monitor: SessionLivenessMonitor<LockSession>;
  private readonly audit: SessionAudit;
  private readonly owner = { releaseLock: (lock: PostgresLock) => this.lines().released(lock), checkLock: checkSession };

  /** `options` were validated by the provider's constructor. */
  constructor(
    private readonly sessions: LockSessions,
    private readonly keyPrefix: string,
    options: { handoff?: HandOffMode; maxLocalHandOffs?: number },
    pingEveryMs: number,
    /** The provider's lines (made after the backend). */
    private readonly lines: () => PostgresLines,
    private readonly leaseNote: IgnoredLeaseNote,
    private readonly log: { warn(message: string): void; error(message: string): void },
  ) {
    this.mode = options.handoff ?? SERIALIZED_DEFAULTS.pgHandoff;
    this.audit = new SessionAudit(sessions.pool, (session) => this.ownedOn(session), log.error);
    this.monitor = new SessionLivenessMonitor<LockSession>(
      () => sessions.pool.shareable(),
      () => lines().heldCount > 0,
      (session) => this.audit.session(session),
      pingEveryMs,
    );
  }

  /** Whether the liveness checks' timer runs. */
  get armed(): boolean {
    return this.monitor.armed;
  }

  take(caller: LineCaller<PostgresLock>): Promise<PostgresLock | null> {
    this.leaseNote.check(caller.leaseMs, caller.key);
    this.sessions.assertUsable(caller.key);
    if (caller.shared || caller.limit > 1) return this.takeBeside(caller);
    const attempt = new LockAttempt(this.sessions, caller.key, advisoryLockKey(this.keyPrefix, caller.key), caller);
    return this.attempts.run(attempt, caller, this.lines()).then((grant) => {
      if (grant === null) return null;
      const { fencingToken, session } = grant;
      // A session whose sequence reserves no block (increment 1) cannot hand off.
      const run = session.tokens.block >= 2 ? { mode: caller.handoff ?? this.mode } : undefined;
      return this.holderOf(caller.key, fencingToken, attempt.lockKey, session, run);
    });
  }

  /**
   * A key set at once: one statement on one shared session tries every key in
   * canonical order and keeps all or none (`LockStatements.trySet`); the keys take
   * consecutive tokens of the session's block, so a session whose block is smaller
   * than the set (a sequence of a small increment) answers `null` and the set goes
   * key by key. A busy key is `null`, nothing held; an error ends the session, which
   * frees whatever the statement took.
   */
  async takeSet(callers: readonly LineCaller<PostgresLock>[]): Promise<PostgresLock[] | null> {
    const first = callers[0];
    for (const caller of callers) this.leaseNote.check(caller.leaseMs, caller.key);
    this.sessions.assertUsable(first.key);
    const keys = callers.map((caller) => caller.key);
    const lockKeys = keys.map((key) => advisoryLockKey(this.keyPrefix, key));
    const session = await this.sharedSession(first);
    if (session.tokens.block < callers.length) {
      this.sessions.pool.release(session);
      return null;
    }
    // The audit counts the set's keys as owned from now until their holders are made (or the keys are given back).
    for (const lockKey of lockKeys) this.settingKeys.add(lockKey);
    let row: unknown[];
    try {
      row = await session.trySet(this.sessions.statements, lockKeys, keys);
    } catch (error) {
      this.sessions.pool.discard(session, error instanceof Error ? error : new Error(String(error)));
      throw this.sessions.backendError(first.key, error);
    } finally {
      for (const lockKey of lockKeys) this.settingKeys.delete(lockKey);
    }
    const [token, , pid] = row;
    if (Number(pid) !== session.pid) {
      const error = new SessionChangedError(session.pid, Number(pid));
      this.sessions.refuse(error);
      this.sessions.pool.discard(session, error);
      throw this.sessions.backendError(first.key, error);
    }
    if (token === null || token === undefined) {
      this.sessions.pool.release(session);
      return null;
    }
    const base = BigInt(token as string);
    // The set's tokens are the block's from `base` on: the session's next grant or hand-off comes after the last.
    session.tokens.granted(base);
    session.tokens.granted(base + BigInt(callers.length - 1));
    return callers.map((caller, i) => {
      // Each lock holds one use of the session, as a lock taken alone does.
      if (i > 0) this.sessions.pool.useAgain(session);
      const run = session.tokens.block >= 2 ? { mode: caller.handoff ?? this.mode } : undefined;
      return this.holderOf(caller.key, base + BigInt(i), lockKeys[i], session, run);
    });
  }

  /** A session others may share, for a statement that never waits in the server (a set's try). */
  private sharedSession(caller: LineCaller<PostgresLock>): Promise<LockSession> {
    const sessions = this.sessions;
    const taken = sessions.pool.take({
      shared: true,
      timeoutMs: Math.max(0, caller.waitTimeoutMs - (performance.now() - caller.startedAt)),
      timeoutError: () =>
        new LockTimeoutError(caller.key, caller.waitTimeoutMs, undefined, {
          reason: 'no-connection',
          message: `no lock session free within ${caller.waitTimeoutMs} ms (pool size ${sessions.pool.size})`,
        }),
      backendError: (cause) => sessions.backendError(caller.key, cause),
    });
    return 'promise' in taken ? taken.promise : Promise.resolve(taken);
  }

  windingDown(key: string): Promise<void> | undefined {
    return this.attempts.windingDown(key);
  }

  /** A caller that holds its key beside others: its own attempt, no local hand-off, a fresh token per grant. */
  private takeBeside(caller: LineCaller<PostgresLock>): Promise<PostgresLock | null> {
    const lockKey = advisoryLockKey(this.keyPrefix, caller.key);
    const shape = holdShapeOf(this.keyPrefix, caller.key, lockKey, caller.shared, caller.limit);
    const attempt = new ShapedLockAttempt(this.sessions, caller.key, lockKey, shape, caller);
    return this.attempts.runBeside(attempt, caller, this.lines()).then((grant) => {
      if (grant === null) return null;
      const slotKey = shape.shared ? undefined : slotKeyOf(shape.slotBase, attempt.slot!);
      const beside = { slotKey, shape };
      const lock = new PostgresLock(caller.key, grant.fencingToken, lockKey, grant.session, this.owner, undefined, beside);
      grant.session.hold(lock);
      this.monitor.arm();
      return lock;
    });
  }

  release(lock: PostgresLock, handOn: boolean): HandedLock | undefined | Promise<HandedLock | undefined> {
    if (lock.beside) return this.unlockBeside(lock);
    const eligible = handOn && this.mayHandOn(lock);
    if (eligible && lock.handOffRun!.mode === 'cohort') return this.handOff(lock);
    return this.unlock(lock, eligible);
  }

  adopt(handed: HandedLock, caller: LineCaller<PostgresLock>): PostgresLock | undefined {
    if (handed.session.dead) {
      // The session ended on the way: the server freed the lock, and the caller asks again.
      this.sessions.pool.release(handed.session);
      return undefined;
    }
    // The new holder's own mode, if it gave one, decides its release; the token block carries on.
    const run = caller.handoff && caller.handoff !== handed.handOffRun.mode ? { mode: caller.handoff } : handed.handOffRun;
    return this.holderOf(handed.key, handed.token, handed.lockKey, handed.session, run);
  }

  giveBack(handed: HandedLock): Promise<void> {
    return unlockSession(handed, this.sessions.pool, this.sessions.statements).then(
      (lost) => void (lost instanceof LockLostError && this.log.warn(lost.message)),
    );
  }

  timeoutError(key: string, waitTimeoutMs: number): LockTimeoutError {
    return new LockTimeoutError(key, waitTimeoutMs, undefined, { reason: 'key-held', message: KEY_HELD_HERE });
  }

  stopAsking(error: (key: string) => Error): void {
    this.attempts.abortAll(error);
  }

  /** Audits every lock session now; resolves with the advisory locks found without an owner (given back). */
  auditAll(): Promise<UnownedLock[]> {
    return this.audit.all();
  }

  /** After shutdown: stops the session checks, tells holders past the grace period, closes the lock pool. */
  close(holders: Iterable<PostgresLock>): Promise<void> {
    const { monitor, attempts } = this;
    const { pool, connectTimeoutMs } = this.sessions;
    return closeSessionBackend({ monitor, attempts, pool, connectTimeoutMs, server: 'PostgreSQL' }, holders);
  }

  private holderOf(key: string, fencingToken: bigint, lockKey: string, session: LockSession, run: HandOffRun | undefined): PostgresLock {
    const lock = new PostgresLock(key, fencingToken, lockKey, session, this.owner, run);
    // A session that ended on the way tells the lock at once (its holders were told when it went).
    session.hold(lock);
    this.monitor.arm();
    return lock;
  }

  private mayHandOn(lock: PostgresLock): boolean {
    const { handOffRun, session } = lock;
    return handOffRun !== undefined && session.tokens.available && !lock.lost && !session.dead;
  }

  /** The key stays locked on the holder's session for the next caller here, with the next token of the session's block. */
  private handOff(lock: PostgresLock): HandedLock {
    const { session } = lock;
    session.letGo(lock);
    // The token is taken now, while the key is held: larger than every token this session gave before.
    return { key: lock.key, lockKey: lock.lockKey, session, token: session.tokens.take()!, handOffRun: lock.handOffRun! };
  }

  /** Unlocks on the server (`strict` and eligible: only if another session waits, else keeps it for the next caller here). */
  private async unlock(lock: PostgresLock, keepIfAlone: boolean): Promise<HandedLock | undefined> {
    const outcome = await unlockSession(lock, this.sessions.pool, this.sessions.statements, keepIfAlone);
    if (outcome === KEPT) return this.handOff(lock);
    // A loss found at release is told (signal, `lost`) and logged once; the release itself succeeded in letting go.
    if (outcome instanceof LockLostError && !lock.lost) {
      lock.markLost(outcome);
      this.log.warn(outcome.message);
    }
    return undefined;
  }

  /** Gives back a lock held beside others (its key shared, and its slot); a group's release is told on its channel. */
  private async unlockBeside(lock: PostgresLock): Promise<undefined> {
    const outcome = await unlockBesideSession(lock, this.sessions.pool, this.sessions.statements);
    if (outcome instanceof LockLostError && !lock.lost) {
      lock.markLost(outcome);
      this.log.warn(outcome.message);
    }
    return undefined;
  }

  /** Asked when an audit statement is sent: the lock keys of `connection` someone here stands behind. */
  private ownedOn(session: LockSession): Set<string> {
    const owned = session.heldLockKeys();
    for (const lockKey of this.settingKeys) owned.add(lockKey);
    // An attempt owns its key on any session: it may be between statements or winding down.
    for (const attempt of this.attempts.values()) {
      if (attempt instanceof ShapedLockAttempt) for (const lockKey of attempt.lockKeys) owned.add(lockKey);
      else owned.add(attempt.lockKey);
    }
    return owned;
  }
}
