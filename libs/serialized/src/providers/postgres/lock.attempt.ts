import { performance } from 'node:perf_hooks';
import type { LockBackendError } from '../../errors';
import { LockTimeoutError } from '../../errors';
import { LockSession } from './lock-session';
import type { SessionRequest, PendingSession } from '../sessions/lock-session.pool';
import { HELD_ELSEWHERE, ownSessionRoundMs, ROUND_OVER, type SessionGrant } from '../sessions/lock-session.request';
import { SessionChangedError } from './session-changed.error';
import type { LockSessions } from './lock-sessions';

/** The database side an attempt uses: the pool, the SQL, and how a failure is reported. */
export type AttemptSessions = Pick<LockSessions, 'pool' | 'statements' | 'connectTimeoutMs' | 'backendError' | 'refuse'>;

/** How one caller asks the server for a key. */
export interface AttemptRequest {
  readonly mode: AttemptMode;
  /** The caller's whole wait budget, counted from `startedAt` (the local queue's share included). */
  readonly waitTimeoutMs: number;
  readonly startedAt: number;
  readonly signal: AbortSignal | undefined;
}

/** `wait` queues in PostgreSQL for the rest of the budget; `try` takes the key only if it is free. */
export type AttemptMode = 'wait' | 'try';

/** A part of an attempt's answer: the grant, `null` (a try found the key busy), or `HELD_ELSEWHERE` (a wait's try did). */
export type AttemptAnswer = SessionGrant<LockSession> | null | typeof HELD_ELSEWHERE;

const LOCK_NOT_AVAILABLE = '55P03';
const UNDEFINED_TABLE = '42P01';
/** The largest `lock_timeout` PostgreSQL accepts (an int of milliseconds). */
export const MAX_LOCK_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The second level of an acquisition: the caller already owns the key in this
 * process (first in the local FIFO), so it is the only caller of this process
 * that takes a lock connection for the key and waits in PostgreSQL's lock queue.
 * It answers in up to two parts, each a decoded result: {@link start} tries the
 * key on a shared session (the grant, `null` for a try that found it busy, or
 * `HELD_ELSEWHERE` for a wait); after `HELD_ELSEWHERE` its backend either
 * {@link decline}s (the caller may not wait) or asks for {@link waitBehind}.
 *
 * The wait budget carries over: what is left of `waitTimeoutMs` after the local
 * queue bounds the wait for a pooled connection, then becomes the statement's
 * `lock_timeout`, so the server itself ends the wait and the connection comes
 * back usable. Aborting (the caller's signal, or shutdown) answers the caller at
 * once and cancels the server wait with a CancelRequest; the session is then
 * ended, so a lock granted in the same instant is freed rather than kept.
 */
export class LockAttempt implements SessionRequest {
  /** The key proved held by another session: this caller waits in the server (a waiter, not the holder-to-be). */
  private blocked = false;
  /** The resolvers of the part of the answer being made, while one is. */
  private part: { resolve: (grant: AttemptAnswer) => void; reject: (error: unknown) => void } | undefined;
  private finished = false;
  private abortedWith: { reason: unknown } | undefined;
  private pending: PendingSession<LockSession> | undefined;
  private session: LockSession | undefined;
  private retried = false;
  /** Rounds queued for a session of its own so far (see `ownSessionRoundMs`). */
  private rounds = 0;
  // The current connection is this attempt's alone (a blocking wait), not shared.
  private ownSession = false;
  // The statement in flight waits less than the budget left (lock_timeout clamped).
  private waitClamped = false;
  private readonly onAbort: (() => void) | undefined;
  private whenDone: { promise: Promise<void>; resolve: () => void } | undefined;

  private readonly mode: AttemptMode;
  private readonly waitTimeoutMs: number;
  private readonly startedAt: number;
  private readonly signal: AbortSignal | undefined;

  constructor(
    private readonly sessions: AttemptSessions,
    readonly key: string,
    /** The 64-bit advisory lock key (decimal). */
    readonly lockKey: string,
    request: AttemptRequest,
  ) {
    const { mode, waitTimeoutMs, startedAt, signal } = request;
    this.mode = mode;
    this.waitTimeoutMs = waitTimeoutMs;
    this.startedAt = startedAt;
    this.signal = signal;
    if (signal) {
      this.onAbort = () => this.abort(signal.reason);
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Whether the attempt is over, server side included. */
  get over(): boolean {
    return this.finished;
  }

  /** Resolves when the attempt is over, server side included (made on demand: only shutdown asks). */
  get done(): Promise<void> {
    if (this.finished) return Promise.resolve();
    if (!this.whenDone) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.whenDone = { promise, resolve };
    }
    return this.whenDone.promise;
  }

  /** How long this attempt may queue for a connection: what is left of the budget; a blocked one, a round of it. */
  get timeoutMs(): number {
    const left = Math.max(0, this.remainingMs());
    return this.blocked ? Math.min(left, ownSessionRoundMs(this.rounds)) : left;
  }

  /** SessionRequest: a try shares a session; a blocking wait needs one of its own. */
  get shared(): boolean {
    return !this.blocked;
  }

  /** SessionRequest: the budget ran out in the pool's queue, not on the key. */
  timeoutError(): LockTimeoutError {
    if (this.blocked && this.remainingMs() >= 1) return ROUND_OVER as LockTimeoutError;
    const message = `no lock connection free within ${this.waitTimeoutMs} ms (pool size ${this.sessions.pool.size})`;
    return new LockTimeoutError(this.key, this.waitTimeoutMs, undefined, { reason: 'no-connection', message });
  }

  /** SessionRequest: PostgreSQL could not be reached for a session. */
  backendError(cause: unknown): LockBackendError {
    return this.sessions.backendError(this.key, cause);
  }

  /** The first part of the answer: the try on a shared session (see the class). */
  start(): Promise<AttemptAnswer> {
    const answer = this.nextPart();
    this.takeConnection();
    return answer;
  }

  /** The second part, after `HELD_ELSEWHERE`: the wait in the server's queue, on a session of its own. */
  waitBehind(): Promise<SessionGrant<LockSession>> {
    const answer = this.nextPart() as Promise<SessionGrant<LockSession>>;
    // Given up between the two parts: nothing was taken.
    if (this.abortedWith) this.finish(this.abortedWith.reason);
    else this.takeConnection();
    return answer;
  }

  /** After `HELD_ELSEWHERE`: the caller may not wait, and the attempt ends (it holds nothing). */
  decline(): void {
    this.finish(undefined);
  }

  /** Answers the caller with `reason` now; the server side is wound down in the background. */
  abort(reason: unknown): void {
    if (this.finished || this.abortedWith) return;
    this.abortedWith = { reason };
    this.answer(reason);
    if (this.pending) {
      this.pending.cancel(reason);
    } else if (this.session && this.ownSession) {
      // Only a session of its own may be cancelled: a shared one runs others' statements.
      void this.session.cancel(this.sessions.connectTimeoutMs);
    }
  }

  private keyHeldError(): LockTimeoutError {
    return new LockTimeoutError(this.key, this.waitTimeoutMs, undefined, { reason: 'key-held', message: 'key held by another session' });
  }

  private remainingMs(): number {
    return this.waitTimeoutMs - (performance.now() - this.startedAt);
  }

  private takeConnection(): void {
    const taken = this.sessions.pool.take(this);
    if (taken instanceof LockSession) return this.lock(taken);
    this.pending = taken;
    taken.promise.then(
      (session) => {
        this.pending = undefined;
        this.lock(session);
      },
      (error: unknown) => {
        this.pending = undefined;
        if (error === ROUND_OVER) return this.lookAgain();
        this.finish(error);
      },
    );
  }

  /** A round in the pool's queue is over: the key is tried again on a shared session (it may have come free). */
  private lookAgain(): void {
    this.rounds++;
    this.blocked = false;
    this.takeConnection();
  }

  private lock(session: LockSession): void {
    // A blocked caller asked the pool for a session of its own (see `shared`).
    this.ownSession = !this.shared;
    if (this.abortedWith) {
      this.sessions.pool.release(session);
      return this.finish(this.abortedWith.reason);
    }
    this.session = session;
    const left = this.remainingMs();
    // lock_timeout = 0 would mean "wait forever": with no budget left, only try.
    // A wait starts with a try on a shared session: whether another session holds
    // the key tells a caller about to hold it from one that waits (see `answered`),
    // and only one that waits takes a session of its own.
    const waits = this.mode === 'wait' && left >= 1 && this.blocked && this.ownSession;
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
    if (this.abortedWith) return this.windDown(session, granted, this.abortedWith.reason);
    if (!granted && this.mode === 'wait' && !this.blocked) {
      this.blocked = true;
      this.sessions.pool.release(session);
      // The backend counts the caller as a waiter once, not again after each round.
      return this.rounds === 0 ? this.settle(HELD_ELSEWHERE) : this.takeConnection();
    }
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
    if (this.abortedWith) return this.windDown(session, true, this.abortedWith.reason);
    if (code === LOCK_NOT_AVAILABLE) {
      // lock_timeout ended the wait on the server: nothing is held, the session is reusable.
      if (this.waitClamped && this.remainingMs() >= 1) return this.lock(session);
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
      return this.takeConnection();
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

  /**
   * Ends an attempt whose statement may have taken the key (`mayHold`) although
   * nobody will hold it. A session of its own is ended (a late cancel must not hit
   * the next statement on it, and ending it frees whatever it took); a shared one
   * unlocks first. Either way the next caller of the key in this process starts
   * only once the key is given back.
   */
  private windDown(session: LockSession, mayHold: boolean, error: unknown): void {
    if (this.ownSession || session.dead) {
      this.sessions.pool.discard(session, error instanceof Error ? error : new Error('the lock attempt ended'));
      return this.finish(error);
    }
    if (!mayHold) {
      this.sessions.pool.release(session);
      return this.finish(error);
    }
    session
      .unlock(this.sessions.statements, this.lockKey)
      .then(
        () => this.sessions.pool.release(session),
        (failure: unknown) => this.sessions.pool.discard(session, failure instanceof Error ? failure : new Error(String(failure))),
      )
      .finally(() => this.finish(error));
  }

  private finish(error: unknown, grant?: SessionGrant<LockSession> | null): void {
    if (!this.finished) {
      this.finished = true;
      if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
      this.whenDone?.resolve();
    }
    if (grant) this.settle(grant);
    else if (error === undefined) this.settle(null);
    else this.answer(error);
  }

  /** Opens the next part of the answer. */
  private nextPart(): Promise<AttemptAnswer> {
    return new Promise<AttemptAnswer>((resolve, reject) => (this.part = { resolve, reject }));
  }

  private settle(answer: AttemptAnswer): void {
    const part = this.part;
    this.part = undefined;
    part?.resolve(answer);
  }

  private answer(error: unknown): void {
    const part = this.part;
    this.part = undefined;
    part?.reject(error);
  }
}
