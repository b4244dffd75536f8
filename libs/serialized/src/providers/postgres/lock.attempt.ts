import { LockSession } from './lock.session';
import type { LockSessions } from './lock.sessions';
import { SessionChangedError } from './session-changed.error';
import { SessionLockAttempt, type SessionAttemptRequest } from '../sessions/session-lock.attempt';

/** The database side an attempt uses: the pool, the SQL, and how a failure is reported. */
export type AttemptSessions = Pick<LockSessions, 'pool' | 'statements' | 'connectTimeoutMs' | 'backendError' | 'refuse'>;

const LOCK_NOT_AVAILABLE = '55P03';
const UNDEFINED_TABLE = '42P01';
/** The largest `lock_timeout` PostgreSQL accepts (an int of milliseconds). */
export const MAX_LOCK_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The second level of an acquisition: the caller already owns the key in this
 * process (first in the local FIFO), so it is the only caller of this process
 * that takes a lock session for the key and waits in PostgreSQL's lock queue.
 * How it answers, and what it does while the pool is full: `SessionLockAttempt`.
 *
 * The wait budget carries over: what is left of `waitTimeoutMs` after the local
 * queue bounds the wait for a pooled connection, then becomes the statement's
 * `lock_timeout`, so the server itself ends the wait and the connection comes
 * back usable. Aborting (the caller's signal, or shutdown) answers the caller at
 * once and cancels the server wait with a CancelRequest; the session is then
 * ended, so a lock granted in the same instant is freed rather than kept.
 */
export class LockAttempt extends SessionLockAttempt<LockSession> {
  private session: LockSession | undefined;
  private retried = false;
  // The current connection is this attempt's alone (a blocking wait), not shared.
  private ownSession = false;
  // The statement in flight waits less than the budget left (lock_timeout clamped).
  private waitClamped = false;

  constructor(
    private readonly sessions: AttemptSessions,
    key: string,
    /** The 64-bit advisory lock key (decimal). */
    readonly lockKey: string,
    request: SessionAttemptRequest,
  ) {
    super(sessions.pool, key, request, (failedKey, cause) => sessions.backendError(failedKey, cause));
  }

  protected stopServerWait(): void {
    // Only a session of its own may be cancelled: a shared one runs others' statements.
    if (this.session && this.ownSession) void this.session.cancel(this.sessions.connectTimeoutMs);
  }

  protected lock(session: LockSession): void {
    // A blocked caller asked the pool for a session of its own (see `shared`).
    this.ownSession = !this.shared;
    this.session = session;
    const left = this.remainingMs();
    // lock_timeout = 0 would mean "wait forever": with no budget left, only try.
    // A wait starts with a try on a shared session: whether another session holds
    // the key tells a caller about to hold it from one that waits (see `answered`),
    // and only one that waits takes a session of its own.
    const waits = this.mode === 'wait' && left >= 1 && this.waitsInServer && this.ownSession;
    const remaining = Math.ceil(left);
    // Any budget is valid; the server takes at most 2^31−1 ms, so a longer budget
    // waits in rounds (see failed()).
    const serverWaitMs = waits ? Math.min(remaining, MAX_LOCK_TIMEOUT_MS) : 0;
    this.waitClamped = waits && serverWaitMs < remaining;
    const answer = waits
      ? session.lockWait(this.sessions.statements, this.lockKey, this.key, serverWaitMs)
      : session.tryLock(this.sessions.statements, this.lockKey, this.key);
    answer.then(
      (row) => this.answered(session, row),
      (error: unknown) => this.failed(session, error),
    );
  }

  private answered(session: LockSession, row: unknown[]): void {
    const [token, pid] = row;
    const granted = token !== null && token !== undefined;
    if (Number(pid) !== session.pid) {
      const error = new SessionChangedError(session.pid, Number(pid));
      this.sessions.refuse(error);
      this.sessions.pool.discard(session, error);
      return this.finish(this.backendError(error));
    }
    if (this.gaveUp) return this.windDown(session, granted, this.gaveUp.reason);
    if (!granted && this.mode === 'wait' && !this.waitsInServer) return this.heldElsewhere(session);
    if (!granted) {
      this.sessions.pool.release(session);
      // Busy is an answer, not an error: `try` resolves null.
      return this.mode === 'try' ? this.finish(undefined, null) : this.finish(this.keyHeldError());
    }
    if (this.ownSession) this.sessions.pool.share(session);
    const fencingToken = BigInt(token as string);
    // A draw starts the session's next block of tokens (see SessionTokens).
    session.tokens.granted(fencingToken);
    this.finish(undefined, { fencingToken, session });
  }

  private failed(session: LockSession, error: unknown): void {
    const code = (error as { code?: string })?.code;
    if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
    if (code === LOCK_NOT_AVAILABLE) {
      // lock_timeout ended the wait on the server: nothing is held, the session is reusable.
      if (this.waitClamped && this.remainingMs() >= 1) return this.send(session);
      this.sessions.pool.release(session);
      return this.finish(this.keyHeldError());
    }
    if (session.dead && !this.retried && this.remainingMs() > 0) {
      // The session ended before the grant was read (or before the lock was granted),
      // so nothing is held — the server freed it with the session: a pooled connection
      // that died while idle (a server restart) or under a grant gets one fresh retry.
      this.retried = true;
      this.session = undefined;
      this.sessions.pool.release(session);
      return this.takeSession();
    }
    // Anything else (even an error after the grant, e.g. on nextval) may have left
    // the key taken: it is given back before the attempt ends.
    const cause =
      code === UNDEFINED_TABLE
        ? new Error(
            `the fencing-token sequence ${this.sessions.statements.sequence} is missing (it is created again on the next connection): ${(error as Error).message}`,
            { cause: error },
          )
        : error;
    this.windDown(session, true, this.backendError(cause));
  }

  protected get ownsSession(): boolean {
    return this.ownSession;
  }

  protected giveBack(session: LockSession): Promise<unknown> {
    return session.unlock(this.sessions.statements, this.lockKey);
  }
}
