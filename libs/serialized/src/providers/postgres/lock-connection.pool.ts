import { AsyncResource } from 'node:async_hooks';
import type { Deadline, DeadlineQueue } from '../../internal/deadline-queue';
import type { LockConnection } from './lock-connection';

/** One caller's request for a lock connection. */
export interface ConnectionRequest {
  /** How long it may queue while every connection is busy. */
  readonly timeoutMs: number;
  /** The error when that time runs out. */
  readonly timeoutError: () => Error;
  /** The error when a connection cannot be opened (PostgreSQL unreachable, refused...). */
  readonly backendError: (cause: unknown) => Error;
}

/** A request that could not be served at once. */
export interface PendingConnection {
  readonly promise: Promise<LockConnection>;
  /** Withdraws the request; its promise rejects with `reason`. */
  cancel(reason: unknown): void;
}

interface Waiter {
  readonly request: ConnectionRequest;
  resolve: (connection: LockConnection) => void;
  reject: (error: unknown) => void;
  deadline: Deadline | undefined;
  settled: boolean;
}

/** Options of {@link LockConnectionPool}. */
export interface LockConnectionPoolOptions {
  /** Most connections at once (open, opening, held or idle). */
  readonly size: number;
  /** Opens one session; rejects within the connect timeout. */
  readonly open: () => Promise<LockConnection>;
  /** Idle connections are closed after this long. */
  readonly idleTimeoutMs: number;
  /** After a failed connect, further connects fail fast for this long (the backend is down). */
  readonly retryAfterFailureMs: number;
  /** Bound on closing one connection politely. */
  readonly closeTimeoutMs: number;
}

/**
 * The library's own pool of lock sessions. Unlike `pg.Pool` it keeps "the pool is
 * full" (queue, in arrival order, for as long as the caller's wait budget allows)
 * apart from "PostgreSQL cannot be reached" (fail with the backend error within
 * the connect timeout), and it lets a connection leave the pool for as long as its
 * session holds a lock. Idle connections do not keep the process alive.
 */
export class LockConnectionPool {
  private readonly idle: LockConnection[] = [];
  // Connections out of the pool (held, waiting or running a statement): a flag on
  // each and a count, so taking and returning one allocates nothing.
  private outCount = 0;
  // A Set keeps insertion order: its first entry is the longest-waiting request.
  private readonly waiters = new Set<Waiter>();
  private opening = 0;
  private lastFailure: { at: number; error: unknown } | undefined;
  private reaper: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly closing = new Set<Promise<void>>();
  // The reaper timer is made here, not in the request that happened to arm it.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-pool');

  constructor(
    private readonly options: LockConnectionPoolOptions,
    private readonly deadlines: DeadlineQueue,
  ) {}

  /** Connections open or opening. */
  get total(): number {
    return this.idle.length + this.outCount + this.opening;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  /** Requests queued for a connection. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * An idle connection at once, or a pending request: a new connection is opened
   * for it while the pool has room, otherwise it queues until one comes back.
   * A request served by a connection it opened itself is bounded by the connect
   * timeout rather than its wait budget: an unreachable server must surface as
   * the backend error, not as a timeout.
   */
  take(request: ConnectionRequest): LockConnection | PendingConnection {
    const ready = this.closed ? undefined : this.idle.pop();
    if (ready) {
      this.checkOut(ready);
      return ready;
    }
    let waiter!: Waiter;
    const promise = new Promise<LockConnection>((resolve, reject) => {
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

  /** A healthy connection comes back: to the longest-waiting request, or idle. */
  release(connection: LockConnection): void {
    if (connection.dead) return this.forget(connection);
    if (this.closed) return this.endLater(connection);
    const waiter = this.firstWaiter();
    // Straight to the longest-waiting request: it stays out, still referenced.
    if (waiter) return this.settle(waiter, undefined, connection);
    this.checkIn(connection);
    connection.idleSince = Date.now();
    connection.unref();
    this.idle.push(connection);
    this.armReaper();
  }

  /** A connection that must not be reused: its session is ended (freeing its locks). */
  discard(connection: LockConnection, reason: Error): void {
    connection.kill(reason);
    this.forget(connection);
  }

  /** Rejects every queued request (shutdown). */
  rejectWaiters(error: (request: ConnectionRequest) => Error): void {
    for (const waiter of [...this.waiters]) this.settle(waiter, error(waiter.request));
  }

  /**
   * Stops handing out connections and closes the idle ones. Connections still
   * out (a lock held past the grace period) are closed when they come back.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.rejectWaiters((request) => request.backendError(new Error('the lock pool is closed')));
    if (this.reaper) clearTimeout(this.reaper);
    this.reaper = undefined;
    for (const connection of this.idle.splice(0)) this.endLater(connection);
    await Promise.all(this.closing);
  }

  /** Called by a connection whose session ended (and by release of a dead one). */
  private readonly forget = (connection: LockConnection): void => {
    const at = this.idle.indexOf(connection);
    if (at >= 0) this.idle.splice(at, 1);
    const wasOut = connection.out;
    if (wasOut) this.checkIn(connection);
    if (wasOut || at >= 0) this.pump();
  };

  private checkOut(connection: LockConnection): void {
    connection.out = true;
    this.outCount++;
    connection.ref();
  }

  private checkIn(connection: LockConnection): void {
    if (!connection.out) return;
    connection.out = false;
    this.outCount--;
  }

  private openFor(waiter: Waiter): void {
    const failure = this.lastFailure;
    if (failure && Date.now() - failure.at < this.options.retryAfterFailureMs) {
      this.settle(waiter, waiter.request.backendError(failure.error));
      return;
    }
    this.opening++;
    this.options.open().then(
      (connection) => {
        this.opening--;
        this.lastFailure = undefined;
        connection.onDeath(this.forget);
        this.checkOut(connection);
        if (connection.dead) return this.forget(connection);
        if (waiter.settled) this.release(connection);
        else this.settle(waiter, undefined, connection);
      },
      (error: unknown) => {
        this.opening--;
        this.lastFailure = { at: Date.now(), error };
        this.settle(waiter, waiter.request.backendError(error));
        this.pump();
      },
    );
  }

  private enqueue(waiter: Waiter): void {
    this.waiters.add(waiter);
    waiter.deadline = this.deadlines.schedule(waiter.request.timeoutMs, () =>
      this.settle(waiter, waiter.request.timeoutError()),
    );
  }

  /** Serves queued requests while connections or room are available. */
  private pump(): void {
    if (this.closed) return;
    for (;;) {
      const waiter = this.firstWaiter();
      if (!waiter) return;
      const ready = this.idle.pop();
      if (ready) {
        this.checkOut(ready);
        this.settle(waiter, undefined, ready);
      } else if (this.total < this.options.size) {
        this.unqueue(waiter);
        this.openFor(waiter);
      } else {
        return;
      }
    }
  }

  private firstWaiter(): Waiter | undefined {
    return this.waiters.size === 0 ? undefined : this.waiters.values().next().value;
  }

  private unqueue(waiter: Waiter): void {
    this.waiters.delete(waiter);
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    waiter.deadline = undefined;
  }

  private settle(waiter: Waiter, error: unknown, connection?: LockConnection): void {
    if (waiter.settled) return;
    waiter.settled = true;
    this.unqueue(waiter);
    if (connection) waiter.resolve(connection);
    else waiter.reject(error);
  }

  private endLater(connection: LockConnection): void {
    this.checkIn(connection);
    const ending = connection.end(this.options.closeTimeoutMs).finally(() => this.closing.delete(ending));
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
    for (const connection of this.idle.filter((c) => c.idleSince <= cutoff)) {
      this.idle.splice(this.idle.indexOf(connection), 1);
      this.endLater(connection);
    }
    this.armReaper();
  }
}
