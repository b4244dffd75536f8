import { performance } from 'node:perf_hooks';
import type { LockBackendError } from '../../errors';
import { LockTimeoutError } from '../../errors';
import type { Deadline, DeadlineQueue } from '../../internal/deadline-queue';
import type { CallerMode } from '../../local/line-caller';
import type { SessionRequest, PendingSession } from '../sessions/lock-session.pool';
import { HELD_ELSEWHERE, ownSessionRoundMs, ROUND_OVER, type SessionGrant } from '../sessions/lock-session.request';
import type { LockAnswer, MysqlSession } from './mysql-session';
import type { MysqlSessions } from './mysql-sessions';

/** A part of an attempt's answer: the grant, `null` (a try found the key busy), or `HELD_ELSEWHERE` (a wait's try did). */
export type MysqlAttemptAnswer = SessionGrant<MysqlSession> | null | typeof HELD_ELSEWHERE;

/** How one caller asks the server for a key. */
export interface MysqlAttemptRequest {
  readonly mode: CallerMode;
  /** The whole wait budget, counted from `startedAt` (the local line's share included). */
  readonly waitTimeoutMs: number;
  readonly startedAt: number;
  readonly signal: AbortSignal | undefined;
}

/** MySQL 8's answer to a wait that would close a cycle of named-lock waits between sessions. */
const ER_USER_LOCK_DEADLOCK = 3058;
/** The largest `GET_LOCK` timeout sent (the budget's own cap is 24 h). */
const MAX_WAIT_SECONDS = 2 ** 31 - 1;

/**
 * One caller of this process asks the server for a key (the layer lets one per key
 * ask at a time). First `GET_LOCK(name, 0)` on a shared session; only when another
 * session holds the key does the caller take a session of its own and wait in the
 * server's queue with `GET_LOCK(name, s)`. It answers in up to two parts, each a
 * decoded result: {@link start} gives the grant, `null` (a try found the key busy)
 * or `HELD_ELSEWHERE` (a wait did); then its backend either {@link decline}s (the
 * caller may not wait) or asks for {@link waitBehind}.
 *
 * `GET_LOCK` counts whole seconds on MySQL, so `s` is the budget left rounded up
 * and never ends the wait early; the budget's own deadline (and an abort, and
 * shutdown) ends it with `KILL QUERY` from another connection. A wait that ends
 * that way, or that was granted in the same instant, ends its session, which frees
 * whatever it took: no session is ever left blocked or holding a lock nobody owns.
 */
export class MysqlLockAttempt implements SessionRequest {
  /** The key proved held by another session: this caller waits in the server. */
  private blocked = false;
  /** The resolvers of the part of the answer being made, while one is. */
  private part: { resolve: (answer: MysqlAttemptAnswer) => void; reject: (error: unknown) => void } | undefined;
  private finished = false;
  private retried = false;
  /** Rounds queued for a session of its own so far (see `ownSessionRoundMs`). */
  private rounds = 0;
  private abortedWith: { reason: unknown } | undefined;
  /** The budget ran out while the server wait ran (its kill is on its way). */
  private expired = false;
  private pending: PendingSession<MysqlSession> | undefined;
  /** The session of the blocking wait in flight, if one runs. */
  private waiting: MysqlSession | undefined;
  private deadline: Deadline | undefined;
  private readonly onAbort: (() => void) | undefined;
  private whenDone: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly sessions: Pick<MysqlSessions, 'pool' | 'kill' | 'backendError'>,
    private readonly deadlines: DeadlineQueue,
    readonly key: string,
    /** The named lock's name. */
    readonly name: string,
    private readonly request: MysqlAttemptRequest,
  ) {
    if (request.signal) {
      this.onAbort = () => this.abort(request.signal!.reason);
      request.signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Whether the attempt is over, server side included. */
  get over(): boolean {
    return this.finished;
  }

  /** Resolves when the attempt is over, server side included. */
  get done(): Promise<void> {
    if (this.finished) return Promise.resolve();
    if (!this.whenDone) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.whenDone = { promise, resolve };
    }
    return this.whenDone.promise;
  }

  /** SessionRequest: how long it may queue for a session: what is left of the budget; a blocked one, a round of it. */
  get timeoutMs(): number {
    const left = Math.max(0, this.remainingMs());
    return this.blocked ? Math.min(left, ownSessionRoundMs(this.rounds)) : left;
  }

  /** SessionRequest: a try shares a session; a blocking wait needs one of its own. */
  get shared(): boolean {
    return !this.blocked;
  }

  /** SessionRequest: the budget ran out in the pool's queue. */
  timeoutError(): LockTimeoutError {
    if (this.blocked && this.remainingMs() >= 1) return ROUND_OVER as LockTimeoutError;
    const message = `no lock connection free within ${this.request.waitTimeoutMs} ms (pool size ${this.sessions.pool.size})`;
    return new LockTimeoutError(this.key, this.request.waitTimeoutMs, undefined, { reason: 'no-connection', message });
  }

  /** SessionRequest: MySQL could not be reached for a session. */
  backendError(cause: unknown): LockBackendError {
    return this.sessions.backendError(this.key, cause);
  }

  /** The first part of the answer: `GET_LOCK(name, 0)` on a shared session (see the class). */
  start(): Promise<MysqlAttemptAnswer> {
    const answer = this.nextPart();
    this.takeSession();
    return answer;
  }

  /** The second part, after `HELD_ELSEWHERE`: the wait in the server's queue, on a session of its own. */
  waitBehind(): Promise<SessionGrant<MysqlSession>> {
    const answer = this.nextPart() as Promise<SessionGrant<MysqlSession>>;
    // Given up between the two parts: nothing was taken.
    if (this.abortedWith) this.finish(this.abortedWith.reason);
    else this.takeSession();
    return answer;
  }

  /** After `HELD_ELSEWHERE`: the caller may not wait, and the attempt ends (it holds nothing). */
  decline(): void {
    this.finish(undefined);
  }

  /** Answers the caller with `reason` now; the server side winds down in the background. */
  abort(reason: unknown): void {
    if (this.finished || this.abortedWith) return;
    this.abortedWith = { reason };
    this.answer(reason);
    if (this.pending) this.pending.cancel(reason);
    else if (this.waiting) void this.sessions.kill(this.waiting);
  }

  private remainingMs(): number {
    return this.request.waitTimeoutMs - (performance.now() - this.request.startedAt);
  }

  private keyHeldError(): LockTimeoutError {
    return new LockTimeoutError(this.key, this.request.waitTimeoutMs, undefined, {
      reason: 'key-held',
      message: 'key held by another session',
    });
  }

  private takeSession(): void {
    const taken = this.sessions.pool.take(this);
    if (!('promise' in taken)) return this.lock(taken);
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
    this.takeSession();
  }

  private lock(session: MysqlSession): void {
    if (this.abortedWith) {
      this.sessions.pool.release(session);
      return this.finish(this.abortedWith.reason);
    }
    const left = this.remainingMs();
    if (this.request.mode === 'wait' && this.blocked && left >= 1) return this.wait(session, left);
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
    if (this.abortedWith) return this.windDown(session, taken, this.abortedWith.reason);
    if (!taken && this.request.mode === 'wait' && !this.blocked) {
      this.blocked = true;
      this.sessions.pool.release(session);
      // The backend counts the caller as a waiter once, not again after each round.
      return this.rounds === 0 ? this.settle(HELD_ELSEWHERE) : this.takeSession();
    }
    if (!taken) {
      this.sessions.pool.release(session);
      return this.request.mode === 'try' ? this.finish(undefined, null) : this.finish(this.keyHeldError());
    }
    this.granted(session, answer.counter);
  }

  private waited(session: MysqlSession, { granted, counter }: LockAnswer): void {
    this.stopWaiting();
    const gaveUp = this.abortedWith?.reason ?? (this.expired ? this.keyHeldError() : undefined);
    // Killed, or granted in the instant the caller gave up: ending the session frees what it took.
    if (gaveUp !== undefined) return this.windDown(session, granted !== 0, gaveUp);
    if (granted === 1) {
      this.sessions.pool.share(session);
      return this.granted(session, counter);
    }
    if (granted === 0) {
      // The server's whole seconds ran out first (a budget above its cap): wait again for the rest.
      if (this.remainingMs() >= 1) return this.lock(session);
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
        if (this.abortedWith) return this.windDown(session, true, this.abortedWith.reason);
        this.finish(undefined, { fencingToken: token, session });
      },
      (error: unknown) => this.windDown(session, true, this.sessions.backendError(this.key, error)),
    );
  }

  private failed(session: MysqlSession, error: unknown): void {
    this.stopWaiting();
    if (this.abortedWith) return this.windDown(session, true, this.abortedWith.reason);
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

  /**
   * Ends an attempt whose statement may have taken the key (`mayHold`) although
   * nobody will hold it. A session of its own (a wait, perhaps with a kill on its
   * way that must not hit a later statement) is ended, which frees whatever it
   * took; a shared one releases first. The next caller of this process starts only
   * once the key is given back.
   */
  private windDown(session: MysqlSession, mayHold: boolean, error: unknown): void {
    if (this.blocked || session.dead) {
      this.sessions.pool.discard(session, error instanceof Error ? error : new Error('the lock attempt ended'));
      return this.finish(error);
    }
    if (!mayHold) {
      this.sessions.pool.release(session);
      return this.finish(error);
    }
    session
      .releaseLock(this.name)
      .then(
        () => this.sessions.pool.release(session),
        (failure: unknown) => this.sessions.pool.discard(session, failure instanceof Error ? failure : new Error(String(failure))),
      )
      .finally(() => this.finish(error));
  }

  private finish(error: unknown, grant?: SessionGrant<MysqlSession> | null): void {
    if (!this.finished) {
      this.finished = true;
      if (this.onAbort) this.request.signal!.removeEventListener('abort', this.onAbort);
      this.whenDone?.resolve();
    }
    if (grant) this.settle(grant);
    else if (error === undefined) this.settle(null);
    else this.answer(error);
  }

  /** Opens the next part of the answer. */
  private nextPart(): Promise<MysqlAttemptAnswer> {
    return new Promise<MysqlAttemptAnswer>((resolve, reject) => (this.part = { resolve, reject }));
  }

  private settle(answer: MysqlAttemptAnswer): void {
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
