import { performance } from 'node:perf_hooks';
import type { LockBackendError } from '../../errors';
import { LockTimeoutError } from '../../errors';
import type { CallerMode } from '../../local/line.caller';
import type { LockSessionPool } from './lock-session.pool';
import {
  HELD_ELSEWHERE,
  ownSessionRoundMs,
  ROUND_OVER,
  type PendingSession,
  type PooledSession,
  type SessionGrant,
  type SessionRequest,
} from './lock-session.request';

/** How one caller asks the server for a key. */
export interface SessionAttemptRequest {
  /** `wait` queues in the server for the rest of the budget; `try` takes the key only if it is free. */
  readonly mode: CallerMode;
  /** The caller's whole wait budget, counted from `startedAt` (the local line's share included). */
  readonly waitTimeoutMs: number;
  readonly startedAt: number;
  readonly signal: AbortSignal | undefined;
}

/** A part of an attempt's answer: the grant, `null` (a try found the key busy), or `HELD_ELSEWHERE` (a wait's try did). */
export type SessionAnswer<C extends PooledSession> = SessionGrant<C> | null | typeof HELD_ELSEWHERE;

/**
 * One caller of this process asking a SQL server for a key on the sessions of the
 * library's pool: what the PostgreSQL and MySQL attempts share. The caller already
 * owns the key in this process (the layer lets one caller per key ask at a time).
 * First a non-blocking try on a shared session; only when another session holds
 * the key does a waiting caller take a session of its own and wait in the server's
 * queue. The answer comes in up to two parts, each a decoded result: {@link start}
 * gives the grant, `null` (a try found the key busy) or `HELD_ELSEWHERE` (a wait
 * did); then the backend either {@link decline}s (the caller may not wait) or asks
 * for {@link waitBehind}.
 *
 * While every session of the pool holds a lock there is none to wait on: the
 * caller queues for one in rounds and looks at the key again between them
 * (`ownSessionRoundMs`). Aborting (the caller's signal, shutdown) answers at once;
 * the server side winds down in the background, and `done` resolves when it has.
 *
 * A driver says what to send on a session (`lock`), how to stop a server wait in
 * flight (`stopServerWait`), whether the session in use is the attempt's own
 * (`ownsSession`) and how to give back what a try took (`giveBack`), and reports
 * back through the transitions below.
 */
export abstract class SessionLockAttempt<C extends PooledSession> implements SessionRequest {
  /** The key proved held by another session: the caller waits in the server, on a session of its own. */
  private blocked = false;
  /** Rounds queued for a session of its own so far (see `ownSessionRoundMs`). */
  private rounds = 0;
  /** The resolvers of the part of the answer being made, while one is. */
  private part: { resolve: (answer: SessionAnswer<C>) => void; reject: (error: unknown) => void } | undefined;
  private finished = false;
  private abortedWith: { reason: unknown } | undefined;
  private pending: PendingSession<C> | undefined;
  private readonly onAbort: (() => void) | undefined;
  private whenDone: { promise: Promise<void>; resolve: () => void } | undefined;
  protected readonly mode: CallerMode;
  protected readonly waitTimeoutMs: number;
  private readonly startedAt: number;
  private readonly signal: AbortSignal | undefined;

  protected constructor(
    private readonly pool: Pick<LockSessionPool<C>, 'take' | 'release' | 'discard' | 'size'>,
    readonly key: string,
    request: SessionAttemptRequest,
    /** The driver's error for a server it cannot reach. */
    private readonly unreachable: (key: string, cause: unknown) => LockBackendError,
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

  /** Resolves when the attempt is over, server side included (made on demand). */
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

  /** SessionRequest: the budget (or a round of it) ran out in the pool's queue, not on the key. */
  timeoutError(): LockTimeoutError {
    if (this.blocked && this.remainingMs() >= 1) return ROUND_OVER as LockTimeoutError;
    const message = `no lock session free within ${this.waitTimeoutMs} ms (pool size ${this.pool.size})`;
    return new LockTimeoutError(this.key, this.waitTimeoutMs, undefined, { reason: 'no-connection', message });
  }

  /** SessionRequest: the server could not be reached for a session. */
  backendError(cause: unknown): LockBackendError {
    return this.unreachable(this.key, cause);
  }

  /** The first part of the answer: the try on a shared session (see the class). */
  start(): Promise<SessionAnswer<C>> {
    const answer = this.nextPart();
    this.takeSession();
    return answer;
  }

  /** The second part, after `HELD_ELSEWHERE`: the wait in the server's queue, on a session of its own. */
  waitBehind(): Promise<SessionGrant<C>> {
    const answer = this.nextPart() as Promise<SessionGrant<C>>;
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
    else this.stopServerWait();
  }

  /**
   * Sends what the attempt asks now on `session` (a try, or a wait on a session of
   * its own), and reports its outcome. Reached through `send`: only while the caller
   * has not given up.
   */
  protected abstract lock(session: C): void;

  /** Abort: the statement in flight, if it is a wait on a session of its own, is stopped. */
  protected abstract stopServerWait(): void;

  /** Whether the session in use is the attempt's own (a blocking wait): ended, never reused, when the attempt winds down. */
  protected abstract get ownsSession(): boolean;

  /** Gives back, on a shared session, whatever the attempt's statements may have taken. */
  protected abstract giveBack(session: C): Promise<unknown>;

  /** Why the caller gave up, if it did (the server side may still be winding down). */
  protected get gaveUp(): { reason: unknown } | undefined {
    return this.abortedWith;
  }

  /** Whether this is the wait in the server (a session of its own), not the try. */
  protected get waitsInServer(): boolean {
    return this.blocked;
  }

  protected remainingMs(): number {
    return this.waitTimeoutMs - (performance.now() - this.startedAt);
  }

  protected keyHeldError(): LockTimeoutError {
    return new LockTimeoutError(this.key, this.waitTimeoutMs, undefined, { reason: 'key-held', message: 'key held by another session' });
  }

  /** `held-elsewhere`: a waiting caller's try found the key held by another session; its shared session goes back. */
  protected heldElsewhere(session: C): void {
    this.blocked = true;
    this.pool.release(session);
    // The backend counts the caller as a waiter once, not again after each round.
    if (this.rounds === 0) this.settle(HELD_ELSEWHERE);
    else this.takeSession();
  }

  /** `send`: the statement goes out on `session`, unless the caller gave up meanwhile (the session goes back unused). */
  protected send(session: C): void {
    if (this.abortedWith) {
      this.pool.release(session);
      return this.finish(this.abortedWith.reason);
    }
    this.lock(session);
  }

  /** Asks the pool for a session (shared for a try, its own for a wait) and sends on it once it has one. */
  protected takeSession(): void {
    const taken = this.pool.take(this);
    if (!('promise' in taken)) return this.send(taken);
    this.pending = taken;
    taken.promise.then(
      (session) => {
        this.pending = undefined;
        this.send(session);
      },
      (error: unknown) => {
        this.pending = undefined;
        if (error === ROUND_OVER) return this.lookAgain();
        this.finish(error);
      },
    );
  }

  /** `finish`: the attempt is over, server side included; answers the open part with the grant, `null` or `error`. */
  protected finish(error: unknown, grant?: SessionGrant<C> | null): void {
    if (!this.finished) {
      this.finished = true;
      if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
      this.whenDone?.resolve();
    }
    if (grant) this.settle(grant);
    else if (error === undefined) this.settle(null);
    else this.answer(error);
  }

  /**
   * `wind-down`: ends an attempt whose statements may have taken the key (`mayHold`)
   * although nobody will hold it. A session of its own is ended (a late cancel or
   * kill must not hit the next statement on it, and ending it frees whatever it
   * took); a shared one gives back first. Either way the next caller of the key in
   * this process starts only once the key is given back (`done`).
   */
  protected windDown(session: C, mayHold: boolean, error: unknown): void {
    if (this.ownsSession || session.dead) {
      this.pool.discard(session, error instanceof Error ? error : new Error('the lock attempt ended'));
      return this.finish(error);
    }
    if (!mayHold) {
      this.pool.release(session);
      return this.finish(error);
    }
    this.giveBack(session)
      .then(
        () => this.pool.release(session),
        (failure: unknown) => this.pool.discard(session, failure instanceof Error ? failure : new Error(String(failure))),
      )
      .finally(() => this.finish(error));
  }

  /** A round in the pool's queue is over: the key is tried again on a shared session (it may have come free). */
  private lookAgain(): void {
    this.rounds++;
    this.blocked = false;
    this.takeSession();
  }

  private nextPart(): Promise<SessionAnswer<C>> {
    return new Promise<SessionAnswer<C>>((resolve, reject) => (this.part = { resolve, reject }));
  }

  private settle(answer: SessionAnswer<C>): void {
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
