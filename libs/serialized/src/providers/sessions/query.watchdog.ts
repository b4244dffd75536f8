import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/**
 * Something the watchdog looks at on every tick: an opening lock session
 * (`ConnectDeadline`). Why an interface: `ConnectDeadline` is built on the
 * watchdog, so the watchdog names what it needs of it rather than the class
 * (no import cycle), and its spec watches a plain object.
 */
export interface Watched {
  /** Ends the session when its oldest statement is overdue at `now` (watchdog time). */
  checkOverdue(now: number): void;
}

/**
 * Bounds every statement of the lock sessions with one coarse timer instead of
 * a timer per statement: acquire and release each run a statement, and arming
 * and clearing a timer for both would cost more than the rest of the client
 * work. The server answers long before these bounds on a live session (its own
 * `lock_timeout` ends a lock wait); the watchdog only catches a server or path
 * that went silent. While no statement runs there is no timer.
 *
 * Deadlines are kept in the watchdog's own time, which stands still while our
 * event loop is blocked: a tick that comes much later than asked means the
 * process itself did not run (a synchronous burst, a busy host, a debugger), and
 * that gap is not counted as the server's silence. During such a stall nothing
 * was read from the sockets, and an in-process proxy or TLS layer may not even
 * have sent the statement yet.
 */
export class QueryWatchdog {
  private readonly sessions = new Set<Watched>();
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastTickAt = 0;
  // Total time our event loop was seen blocked while statements ran.
  private stalledMs = 0;
  // Created in a neutral scope so the interval never pins a request's context.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-watchdog');

  /** @param tickMs how late an overdue statement may be noticed */
  constructor(private readonly tickMs: number) {}

  get armed(): boolean {
    return this.timer !== undefined;
  }

  /** Now, in watchdog time: wall-clock time minus the stalls of our own event loop. */
  now(): number {
    return performance.now() - this.stalledMs;
  }

  add(session: Watched): void {
    this.sessions.add(session);
  }

  delete(session: Watched): void {
    this.sessions.delete(session);
  }

  /** A statement started; returns its deadline in watchdog time. */
  started(timeoutMs: number): number {
    this.running++;
    if (!this.timer) {
      this.timer = this.scope.runInAsyncScope(() => setInterval(() => this.tick(), this.tickMs));
      this.timer.unref();
      this.lastTickAt = performance.now();
    }
    return this.now() + timeoutMs;
  }

  // The timer stops on its next tick with nothing running, so a busy loop keeps one timer.
  finished(): void {
    this.running--;
  }

  private tick(): void {
    const at = performance.now();
    const gap = at - this.lastTickAt;
    this.lastTickAt = at;
    // Ordinary timer jitter stays below a tick; beyond that, our loop was blocked.
    if (gap > 2 * this.tickMs) this.stalledMs += gap - this.tickMs;
    if (this.running <= 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.now();
    for (const session of this.sessions) session.checkOverdue(now);
  }
}
