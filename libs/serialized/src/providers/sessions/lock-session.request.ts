/**
 * What the pool needs of a session: the PostgreSQL driver's `LockSession`, and
 * any other driver's session that keeps the same life cycle (the MySQL driver's).
 */
export interface PooledSession {
  /** Why the session is gone; `undefined` while it is usable. */
  readonly dead: Error | undefined;
  /** Ends the session at once (its server frees its locks). */
  kill(reason: Error): void;
  /** Closes the session politely, or at once after `timeoutMs`. */
  end(timeoutMs: number): Promise<void>;
  /** Tells `listener` once when the session ends. */
  onDeath(listener: (session: this) => void): void;
  ref(): void;
  unref(): void;
}

/**
 * One caller's request for a lock session. Why an interface: besides the lock
 * attempts (`SessionLockAttempt`), the PostgreSQL inspector and health check ask
 * the pool with plain objects.
 */
export interface SessionRequest {
  /** How long it may queue while every session is busy. */
  readonly timeoutMs: number;
  /** The error when that time runs out. */
  readonly timeoutError: () => Error;
  /** The error when a connection cannot be opened (PostgreSQL unreachable, refused...). */
  readonly backendError: (cause: unknown) => Error;
  /**
   * A shared use (a non-blocking statement, or a held lock) may go to a session
   * other uses share; otherwise the caller gets a session nobody else uses (a
   * blocking lock wait, which would hold up every statement queued behind it).
   */
  readonly shared?: boolean;
}

/** A request that could not be served at once. */
export interface PendingSession<C extends PooledSession> {
  readonly promise: Promise<C>;
  /** Withdraws the request; its promise rejects with `reason`. */
  cancel(reason: unknown): void;
}

/** Options of `LockSessionPool`. */
export interface LockSessionPoolOptions<C extends PooledSession> {
  /** Most connections at once (open, opening, held or idle). */
  readonly size: number;
  /** Opens one session; rejects within the connect timeout. */
  readonly open: () => Promise<C>;
  /** Idle connections are closed after this long. */
  readonly idleTimeoutMs: number;
  /** After a failed connect, further connects fail fast for this long (the backend is down). */
  readonly retryAfterFailureMs: number;
  /** Bound on closing one connection politely. */
  readonly closeTimeoutMs: number;
  /** Most shared uses (held locks plus statements in flight) of one session (default 64). */
  readonly usesPerSession?: number;
}

/**
 * A waiter does not queue for a session of its own for its whole budget: held
 * locks keep their sessions, so a process whose every session holds a lock has
 * none to wait on, and the key the waiter wants may come free meanwhile. Were it
 * to queue on, the holders of the pinned sessions (waiting for it through a key
 * set or a nested call) and the waiter would wait for each other until the budget
 * ran out (test/semantics/session-pool-full.e2e-spec.ts). So it queues for a
 * round — 25 ms, doubling to 400 ms — then looks at the key again with a
 * non-blocking try on a shared session, and queues for the next round if the key
 * is still held. Only a full pool pays for it: a free session ends the rounds.
 */
export function ownSessionRoundMs(round: number): number {
  return Math.min(400, 25 * 2 ** round);
}

/** What a queued request for a session of its own rejects with when its round is over (see {@link ownSessionRoundMs}). */
export const ROUND_OVER: Error = Object.freeze(new Error('the round in the lock pool queue is over; the key is looked at again'));

/** A session attempt's grant, decoded: the holder-to-be's fencing token and the session that now holds the key. */
export interface SessionGrant<C extends PooledSession> {
  readonly fencingToken: bigint;
  readonly session: C;
}

/**
 * A waiting caller's try found the key held by another session: the first answer
 * of its attempt. Its backend then counts it as a waiter of the process (the
 * layer's `waitsBehind`, which may refuse it) and, if it may wait, asks the
 * attempt for the second part: the wait in the server's queue.
 */
export const HELD_ELSEWHERE: unique symbol = Symbol('held by another session');
