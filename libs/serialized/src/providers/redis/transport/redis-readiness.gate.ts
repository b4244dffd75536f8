import type { DeadlineQueue } from '../../../internal/deadline.queue';
import type { EventLoopLagClock } from '../../../internal/event-loop-lag.clock';
import { SilenceWatch } from './silence.watch';

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
  private readonly watch: SilenceWatch;

  constructor(
    deadlines: DeadlineQueue,
    private readonly clock: EventLoopLagClock,
    private readonly timeoutMs: number,
    /** The failure of a call that waited the whole bound. */
    private readonly timedOut: (key: string) => Error,
  ) {
    this.watch = new SilenceWatch(
      deadlines,
      clock,
      () => this.ends(),
      () => this.fail(this.clock.now() - this.timeoutMs, this.timedOut),
    );
  }

  /** Resolves when the connection is ready; rejects when the bound passes first. */
  wait(key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const since = this.clock.now();
      this.waiters.add({ key, since, resolve, reject });
      this.watch.arm(since + this.timeoutMs);
    });
  }

  /** The connection is ready: every waiter goes on. */
  open(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    this.watch.cancel();
    for (const waiter of waiters) waiter.resolve();
  }

  /** Fails every waiter (the connection closed or ended). */
  failAll(error: (key: string) => Error): void {
    this.fail(Infinity, error);
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
    if (this.waiters.size === 0) this.watch.cancel();
  }
}
