import type { Deadline, DeadlineQueue } from '../../../internal/deadline-queue';
import type { EventLoopLagClock } from '../../../internal/event-loop-lag.clock';

/** A call waiting for the connection to become ready. */
interface ReadyWaiter {
  readonly key: string;
  /** From when its bound counts, on the lag-free clock. */
  readonly since: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * Calls waiting for the connection to become ready, each for at most the backend
 * bound: a refused or unroutable Redis never connects, a hung one never answers
 * the ready check, one that refuses the client (authentication, too many
 * clients) keeps failing it. One deadline watches them all.
 *
 * The bound counts on the lag-free clock: a synchronous burst of thousands of
 * calls (the first of which opens the lazy connection) can hold the event loop
 * for longer than the bound, and the connection cannot make any progress before
 * the loop turns; that time is not the server's. A deadline found overdue is
 * confirmed after I/O had its turn (the connect may wait unread).
 */
export class RedisReadinessGate {
  /** Oldest first. */
  private readonly waiters = new Set<ReadyWaiter>();
  private watch: Deadline | undefined;
  private confirming = false;
  private readonly onWatch = (): void => this.watched();

  constructor(
    private readonly deadlines: DeadlineQueue,
    private readonly clock: EventLoopLagClock,
    private readonly timeoutMs: number,
    /** The failure of a call that waited the whole bound. */
    private readonly timedOut: (key: string) => Error,
  ) {}

  /** Resolves when the connection is ready; rejects when the bound passes first. */
  wait(key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const since = this.clock.now();
      this.waiters.add({ key, since, resolve, reject });
      if (!this.watch && !this.confirming) this.watchAt(since + this.timeoutMs);
    });
  }

  /** The connection is ready: every waiter goes on. */
  open(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    this.cancelWatch();
    for (const waiter of waiters) waiter.resolve();
  }

  /** Fails every waiter (the connection closed or ended). */
  failAll(error: (key: string) => Error): void {
    this.fail(Infinity, error);
  }

  private watchAt(at: number): void {
    this.watch = this.deadlines.schedule(Math.max(0, at - this.clock.now()), this.onWatch);
  }

  private watched(): void {
    this.watch = undefined;
    const due = this.ends();
    if (due === undefined) return;
    if (due > this.clock.now() + 1) {
      this.watchAt(due);
      return;
    }
    if (this.confirming) return;
    this.confirming = true;
    setImmediate(() => {
      this.confirming = false;
      this.fail(this.clock.now() - this.timeoutMs, this.timedOut);
      const next = this.ends();
      if (next !== undefined && !this.watch) this.watchAt(next);
    });
  }

  /** When the oldest waiter will have waited the bound; `undefined` when none waits. */
  private ends(): number | undefined {
    if (this.waiters.size === 0) return undefined;
    return this.waiters.values().next().value!.since + this.timeoutMs;
  }

  /** Fails the waiters waiting since `cutoff` or longer. */
  private fail(cutoff: number, error: (key: string) => Error): void {
    for (const waiter of this.waiters) {
      if (waiter.since > cutoff) break;
      this.waiters.delete(waiter);
      waiter.reject(error(waiter.key));
    }
    if (this.waiters.size === 0) this.cancelWatch();
  }

  private cancelWatch(): void {
    if (this.watch) this.deadlines.cancel(this.watch);
    this.watch = undefined;
  }
}
