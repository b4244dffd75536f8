import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/** A connection whose statements the watchdog bounds. */
export interface Watched {
  /** Ends the session when its oldest statement is overdue at `now`. */
  checkOverdue(now: number): void;
}

/**
 * Bounds every statement of the lock sessions with one coarse timer instead of
 * a timer per statement: acquire and release each run a statement, and arming
 * and clearing a timer for both would cost more than the rest of the client
 * work. The server answers long before these bounds on a live session (its own
 * `lock_timeout` ends a lock wait); the watchdog only catches a server or path
 * that went silent. While no statement runs there is no timer.
 */
export class QueryWatchdog {
  private readonly connections = new Set<Watched>();
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  // Created in a neutral scope so the interval never pins a request's context.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-watchdog');

  /** @param tickMs how late an overdue statement may be noticed */
  constructor(private readonly tickMs: number) {}

  get armed(): boolean {
    return this.timer !== undefined;
  }

  add(connection: Watched): void {
    this.connections.add(connection);
  }

  delete(connection: Watched): void {
    this.connections.delete(connection);
  }

  /** A statement started; returns its deadline. */
  started(timeoutMs: number): number {
    this.running++;
    if (!this.timer) {
      this.timer = this.scope.runInAsyncScope(() => setInterval(() => this.tick(), this.tickMs));
      this.timer.unref();
    }
    return performance.now() + timeoutMs;
  }

  // The timer stops on its next tick with nothing running, so a busy loop keeps one timer.
  finished(): void {
    this.running--;
  }

  private tick(): void {
    if (this.running <= 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = performance.now();
    for (const connection of this.connections) connection.checkOverdue(now);
  }
}
