import { AsyncResource } from 'node:async_hooks';
import type { Deadline, DeadlineQueue } from '../../internal/deadline.queue';
import type { SessionRequest, LockSessionPoolOptions, PendingSession, PooledSession } from './lock-session.request';

export type { SessionRequest, LockSessionPoolOptions, PendingSession, PooledSession } from './lock-session.request';

/** The pool's bookkeeping of one connection (written only by the pool). */
interface Use {
  /** Uses handed out (held locks, statements in flight). */
  count: number;
  /** Whether one use has it to itself (a blocking lock wait). */
  exclusive: boolean;
  /** When it was last handed back (for idle reaping). */
  idleSince: number;
}

interface Waiter<C> {
  readonly request: SessionRequest;
  resolve: (session: C) => void;
  reject: (error: unknown) => void;
  deadline: Deadline | undefined;
  settled: boolean;
}

/**
 * The library's own pool of lock sessions. Unlike `pg.Pool` it keeps "the pool is
 * full" (queue, in arrival order, for as long as the caller's wait budget allows)
 * apart from "PostgreSQL cannot be reached" (fail with the backend error within
 * the connect timeout). Idle connections do not keep the process alive.
 *
 * A session may hold many advisory locks, so a held lock does not take a session
 * for itself: shared uses (a `pg_try_advisory_lock`, a held lock, its unlock)
 * spread over the sessions, up to `usesPerSession` each (which also bounds what one
 * process puts into PostgreSQL's shared lock table). Only a blocking wait in the
 * server's lock queue takes a session of its own; once granted, that session
 * becomes shareable again. So the pool size bounds connections, not the number of
 * distinct keys held at once.
 */
export class LockSessionPool<C extends PooledSession> {
  private readonly idle: C[] = [];
  // Connections in use (shared or exclusive), each counting its uses.
  private readonly busy = new Set<C>();
  private readonly uses = new Map<C, Use>();
  // A Set keeps insertion order: its first entry is the longest-waiting request.
  private readonly waiters = new Set<Waiter<C>>();
  private exclusiveWaiting = 0;
  private opening = 0;
  private lastFailure: { at: number; error: unknown } | undefined;
  private reaper: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly closing = new Set<Promise<void>>();
  private readonly usesPerSession: number;
  // The reaper timer is made here, not in the request that happened to arm it.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-pool');

  constructor(
    private readonly options: LockSessionPoolOptions<C>,
    private readonly deadlines: DeadlineQueue,
  ) {
    this.usesPerSession = options.usesPerSession ?? 64;
  }

  /** Most connections at once. */
  get size(): number {
    return this.options.size;
  }

  /** Connections open or opening. */
  get total(): number {
    return this.idle.length + this.busy.size + this.opening;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  /** Open sessions that are neither ending nor waiting in the server's lock queue (a blocking wait has its session to itself). */
  *shareable(): IterableIterator<C> {
    for (const session of this.idle) if (!session.dead) yield session;
    for (const session of this.busy) if (!session.dead && !this.useOf(session).exclusive) yield session;
  }

  /** Every open session of the pool (shared, exclusive or idle). */
  sessions(): C[] {
    return [...this.idle, ...this.busy];
  }

  /** Requests queued for a connection. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * A connection at once, or a pending request: a new connection is opened for it
   * while the pool has room, otherwise it queues until one has room. A request
   * served by a connection it opened itself is bounded by the connect timeout
   * rather than its wait budget: an unreachable server must surface as the
   * backend error, not as a timeout. Every use is given back with `release`.
   */
  take(request: SessionRequest): C | PendingSession<C> {
    const ready = this.closed ? undefined : this.ready(request);
    if (ready) return ready;
    let waiter!: Waiter<C>;
    const promise = new Promise<C>((resolve, reject) => {
      waiter = { request, resolve, reject, deadline: undefined, settled: false };
    });
    if (this.closed) {
      this.settle(waiter, request.backendError(new Error('the lock pool is closed')));
    } else if (this.total < this.options.size) {
      this.openFor(waiter);
    } else {
      this.enqueue(waiter);
    }
    return { promise, cancel: (reason: unknown) => this.settle(waiter, reason) };
  }

  /** An exclusive use was granted its lock: the session may now be shared. */
  share(session: C): void {
    const use = this.uses.get(session);
    if (!use?.exclusive) return;
    use.exclusive = false;
    this.pump();
  }

  /**
   * One more use of a session in use already: a further lock taken by the same
   * statement (a key set taken at once), given back with `release` as any use.
   */
  useAgain(session: C): void {
    this.useOf(session).count++;
  }

  /** One use of a healthy connection ends; the last one makes it free for anyone. */
  release(session: C): void {
    if (session.dead) return this.forget(session);
    const use = this.useOf(session);
    use.count = Math.max(0, use.count - 1);
    if (use.count > 0) return this.pump();
    use.exclusive = false;
    this.busy.delete(session);
    if (this.closed) return this.endLater(session);
    use.idleSince = Date.now();
    this.idle.push(session);
    this.pump();
    if (use.count === 0) session.unref();
    this.armReaper();
  }

  /** A connection that must not be reused: its session is ended (freeing its locks). */
  discard(session: C, reason: Error): void {
    session.kill(reason);
    this.forget(session);
  }

  /** Rejects every queued request (shutdown). */
  rejectWaiters(error: (request: SessionRequest) => Error): void {
    for (const waiter of [...this.waiters]) this.settle(waiter, error(waiter.request));
  }

  /**
   * Stops handing out connections and closes the idle ones. Connections still
   * in use (a lock held past the grace period) are closed when their last use ends.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.rejectWaiters((request) => request.backendError(new Error('the lock pool is closed')));
    if (this.reaper) clearTimeout(this.reaper);
    this.reaper = undefined;
    for (const session of this.idle.splice(0)) this.endLater(session);
    await Promise.all(this.closing);
  }

  /** Called by a connection whose session ended (and by release of a dead one). */
  private readonly forget = (session: C): void => {
    const at = this.idle.indexOf(session);
    if (at >= 0) this.idle.splice(at, 1);
    const wasBusy = this.busy.delete(session);
    this.uses.delete(session);
    if (wasBusy || at >= 0) this.pump();
  };

  /**
   * A connection for `request` without waiting, if one has room. While a request
   * for a session of its own waits, shared uses pack onto the busiest sessions
   * with room, so that one falls idle for it.
   */
  private ready(request: SessionRequest): C | undefined {
    const packing = this.exclusiveWaiting > 0;
    if (!request.shared || !packing) {
      const idle = this.idle.pop();
      if (idle) return this.use(idle, request);
      if (!request.shared || this.total < this.options.size) return undefined;
    }
    let best: C | undefined;
    for (const session of this.busy) {
      const use = this.useOf(session);
      if (use.exclusive || session.dead || use.count >= this.usesPerSession) continue;
      if (!best || (packing ? use.count > this.useOf(best).count : use.count < this.useOf(best).count)) best = session;
    }
    const chosen = best ?? this.idle.pop();
    return chosen && this.use(chosen, request);
  }

  private use(session: C, request: SessionRequest): C {
    const use = this.useOf(session);
    if (use.count === 0) session.ref();
    use.count++;
    use.exclusive = !request.shared;
    this.busy.add(session);
    return session;
  }

  /** A connection's bookkeeping (made on first use: a connection the pool did not open counts from zero). */
  private useOf(session: C): Use {
    let use = this.uses.get(session);
    if (!use) {
      use = { count: 0, exclusive: false, idleSince: 0 };
      this.uses.set(session, use);
    }
    return use;
  }

  private openFor(waiter: Waiter<C>): void {
    const failure = this.lastFailure;
    if (failure && Date.now() - failure.at < this.options.retryAfterFailureMs) {
      this.settle(waiter, waiter.request.backendError(failure.error));
      return;
    }
    this.opening++;
    this.options.open().then(
      (session) => {
        this.opening--;
        this.lastFailure = undefined;
        this.uses.set(session, { count: 0, exclusive: false, idleSince: 0 });
        session.onDeath(this.forget);
        this.use(session, waiter.request);
        if (session.dead) return this.forget(session);
        if (waiter.settled) this.release(session);
        else {
          this.settle(waiter, undefined, session);
          this.pump();
        }
      },
      (error: unknown) => {
        this.opening--;
        this.lastFailure = { at: Date.now(), error };
        this.settle(waiter, waiter.request.backendError(error));
        this.pump();
      },
    );
  }

  private enqueue(waiter: Waiter<C>): void {
    this.waiters.add(waiter);
    if (!waiter.request.shared) this.exclusiveWaiting++;
    waiter.deadline = this.deadlines.schedule(waiter.request.timeoutMs, () => this.settle(waiter, waiter.request.timeoutError()));
  }

  /**
   * Serves queued requests in arrival order while there is room. A request for a
   * session of its own that cannot be served yet does not hold up shared ones
   * behind it; it is first in line for the next session that falls idle.
   */
  private pump(): void {
    if (this.closed) return;
    // Deleting the entry being visited is safe while iterating a Set.
    for (const waiter of this.waiters) {
      const ready = this.ready(waiter.request);
      if (ready) {
        this.settle(waiter, undefined, ready);
      } else if (this.total < this.options.size) {
        this.unqueue(waiter);
        this.openFor(waiter);
      } else if (waiter.request.shared) {
        return; // no room for a shared use: none for anything behind it either
      }
    }
  }

  private unqueue(waiter: Waiter<C>): void {
    if (this.waiters.delete(waiter) && !waiter.request.shared) this.exclusiveWaiting--;
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    waiter.deadline = undefined;
  }

  private settle(waiter: Waiter<C>, error: unknown, session?: C): void {
    if (waiter.settled) return;
    waiter.settled = true;
    this.unqueue(waiter);
    if (session) waiter.resolve(session);
    else waiter.reject(error);
  }

  private endLater(session: C): void {
    this.busy.delete(session);
    this.uses.delete(session);
    const ending = session.end(this.options.closeTimeoutMs).finally(() => this.closing.delete(ending));
    this.closing.add(ending);
  }

  /** One timer for all idle connections, and none when nothing is idle. */
  private armReaper(): void {
    if (this.reaper || this.idle.length === 0) return;
    this.reaper = this.scope.runInAsyncScope(() => setTimeout(() => this.reap(), this.options.idleTimeoutMs));
    this.reaper.unref();
  }

  private reap(): void {
    this.reaper = undefined;
    const cutoff = Date.now() - this.options.idleTimeoutMs;
    for (const session of this.idle.filter((c) => this.useOf(c).idleSince <= cutoff)) {
      this.idle.splice(this.idle.indexOf(session), 1);
      this.endLater(session);
    }
    this.armReaper();
  }
}
