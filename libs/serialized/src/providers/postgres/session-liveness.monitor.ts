import { AsyncResource } from 'node:async_hooks';
import type { LockConnection } from './lock-connection';

/**
 * Pings the sessions that hold locks, one timer for all of them. A terminated
 * backend or a server restart usually announces itself at once (the socket
 * closes and the connection reports it); the ping catches the silent cases: a
 * dropped network path, a session that changed under a pooler. Each ping is one
 * cheap statement (`SELECT pg_backend_pid()`), skipped while the session is
 * busy anyway (so a slow path has one ping in flight, never a pile of them). A
 * session that leaves a ping unanswered for its `sessionTimeoutMs` is ended,
 * which aborts its holder's signal; a slow answer is an answer. With no lock
 * held there is no timer.
 */
export class SessionLivenessMonitor {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  // Created in a neutral scope so the interval never pins a request's context.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-liveness');

  /**
   * @param held the sessions holding locks right now (read on every tick, so
   *   holding and releasing costs the monitor nothing)
   * @param intervalMs time between pings of one session
   */
  constructor(
    private readonly held: () => Iterable<LockConnection>,
    private readonly intervalMs: number,
  ) {}

  /** Whether the timer runs (tests check that none runs when nothing is held). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  /** A lock was granted: make sure the timer runs. */
  arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = this.scope.runInAsyncScope(() => setInterval(() => this.tick(), this.intervalMs));
    this.timer.unref();
  }

  /** Stops pinging for good (shutdown: past the grace period leases run out on their own). */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  // The timer stops on the first tick that finds nothing held, so a fast
  // acquire/release loop does not create and clear an interval every time.
  private tick(): void {
    let any = false;
    for (const connection of this.held()) {
      any = true;
      if (!connection.dead && !connection.busy) {
        // A failed ping has already ended the session and told its holder.
        connection.ping().catch((error: Error) => connection.kill(error));
      }
    }
    if (!any) this.disarm();
  }

  private disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
