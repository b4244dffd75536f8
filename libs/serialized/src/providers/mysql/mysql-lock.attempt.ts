import type { Deadline, DeadlineQueue } from '../../internal/deadline.queue';
import { SessionLockAttempt, type SessionAttemptRequest } from '../sessions/session-lock.attempt';
import type { LockAnswer, MysqlSession } from './mysql.session';
import type { MysqlSessions } from './mysql.sessions';

/** MySQL 8's answer to a wait that would close a cycle of named-lock waits between sessions. */
const ER_USER_LOCK_DEADLOCK = 3058;
/** The largest `GET_LOCK` timeout sent (the budget's own cap is 24 h). */
const MAX_WAIT_SECONDS = 2 ** 31 - 1;

/**
 * One caller of this process asks the server for a key (the layer lets one per key
 * ask at a time). First `GET_LOCK(name, 0)` on a shared session; only when another
 * session holds the key does the caller take a session of its own and wait in the
 * server's queue with `GET_LOCK(name, s)`. How it answers, and what it does while
 * the pool is full: `SessionLockAttempt`.
 *
 * `GET_LOCK` counts whole seconds on MySQL, so `s` is the budget left rounded up
 * and never ends the wait early; the budget's own deadline (and an abort, and
 * shutdown) ends it with `KILL QUERY` from another connection. A wait that ends
 * that way, or that was granted in the same instant, ends its session, which frees
 * whatever it took: no session is ever left blocked or holding a lock nobody owns.
 */
export class MysqlLockAttempt extends SessionLockAttempt<MysqlSession> {
  private retried = false;
  /** The budget ran out while the server wait ran (its kill is on its way). */
  private expired = false;
  /** The session of the blocking wait in flight, if one runs. */
  private waiting: MysqlSession | undefined;
  private deadline: Deadline | undefined;

  constructor(
    private readonly sessions: Pick<MysqlSessions, 'pool' | 'kill' | 'backendError'>,
    private readonly deadlines: DeadlineQueue,
    key: string,
    /** The named lock's name. */
    readonly name: string,
    request: SessionAttemptRequest,
  ) {
    super(sessions.pool, key, request, (failedKey, cause) => sessions.backendError(failedKey, cause));
  }

  protected stopServerWait(): void {
    if (this.waiting) void this.sessions.kill(this.waiting);
  }

  protected lock(session: MysqlSession): void {
    const left = this.remainingMs();
    if (this.mode === 'wait' && this.waitsInServer && left >= 1) return this.wait(session, left);
    session.tryLock(this.name).then(
      (answer) => this.tried(session, answer),
      (error: unknown) => this.failed(session, error),
    );
  }

  /** The blocking wait on a session of its own, bounded by the server (rounded up) and by the budget's deadline (kill). */
  private wait(session: MysqlSession, leftMs: number): void {
    this.waiting = session;
    this.deadline = this.deadlines.schedule(leftMs, () => {
      this.deadline = undefined;
      this.expired = true;
      void this.sessions.kill(session);
    });
    const seconds = Math.min(MAX_WAIT_SECONDS, Math.ceil(leftMs / 1000));
    session.waitLock(this.name, seconds).then(
      (answer) => this.waited(session, answer),
      (error: unknown) => this.failed(session, error),
    );
  }

  private tried(session: MysqlSession, answer: LockAnswer): void {
    const taken = answer.granted === 1;
    if (this.gaveUp) return this.windDown(session, taken, this.gaveUp.reason);
    if (!taken && this.mode === 'wait' && !this.waitsInServer) return this.heldElsewhere(session);
    if (!taken) {
      this.sessions.pool.release(session);
      return this.mode === 'try' ? this.finish(undefined, null) : this.finish(this.keyHeldError());
    }
    this.granted(session, answer.counter);
  }

  private waited(session: MysqlSession, { granted, counter }: LockAnswer): void {
    this.stopWaiting();
    const gaveUp = this.gaveUp?.reason ?? (this.expired ? this.keyHeldError() : undefined);
    // Killed, or granted in the instant the caller gave up: ending the session frees what it took.
    if (gaveUp !== undefined) return this.windDown(session, granted !== 0, gaveUp);
    if (granted === 1) {
      this.sessions.pool.share(session);
      return this.granted(session, counter);
    }
    if (granted === 0) {
      // The server's whole seconds ran out first (a budget above its cap): wait again for the rest.
      if (this.remainingMs() >= 1) return this.send(session);
      this.sessions.pool.release(session);
      return this.finish(this.keyHeldError());
    }
    this.windDown(
      session,
      true,
      this.sessions.backendError(this.key, new Error('GET_LOCK returned NULL (the wait was killed by someone else, or failed)')),
    );
  }

  private granted(session: MysqlSession, counter: bigint | undefined): void {
    session.grantToken(counter).then(
      (token) => {
        if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
        this.finish(undefined, { fencingToken: token, session });
      },
      (error: unknown) => this.windDown(session, true, this.sessions.backendError(this.key, error)),
    );
  }

  private failed(session: MysqlSession, error: unknown): void {
    this.stopWaiting();
    if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
    if (this.expired) return this.windDown(session, true, this.keyHeldError());
    if (session.dead && !this.retried && this.remainingMs() > 0) {
      // The session ended before the answer was read, so nothing is held (the server
      // freed it with the session): a pooled session that died while idle gets one fresh retry.
      this.retried = true;
      this.sessions.pool.release(session);
      return this.takeSession();
    }
    const errno = (error as { errno?: number })?.errno;
    const cause =
      errno === ER_USER_LOCK_DEADLOCK
        ? new Error(
            `MySQL refused the wait: it would close a cycle of named-lock waits (ER_USER_LOCK_DEADLOCK): ${(error as Error).message}`,
            { cause: error },
          )
        : error;
    this.windDown(session, errno !== ER_USER_LOCK_DEADLOCK, this.sessions.backendError(this.key, cause));
  }

  private stopWaiting(): void {
    this.waiting = undefined;
    if (this.deadline) this.deadlines.cancel(this.deadline);
    this.deadline = undefined;
  }

  /** A wait (perhaps with a kill on its way that must not hit a later statement) runs on a session of its own. */
  protected get ownsSession(): boolean {
    return this.waitsInServer;
  }

  protected giveBack(session: MysqlSession): Promise<unknown> {
    return session.releaseLock(this.name);
  }
}
