import { AsyncResource } from 'node:async_hooks';

/**
 * Checks the lock sessions while locks are held, one timer for all of them. A
 * terminated backend or a server restart usually announces itself at once (the
 * socket closes and the connection reports it); the check catches the silent
 * cases: a dropped network path, a session that changed under a pooler, and an
 * advisory lock the server shows that nobody in this process owns (the session
 * audit, which gives it back). Each check is one statement per session, never two
 * at once on one session (so a slow path has one in flight, never a pile of them).
 * A session that leaves it unanswered for its `sessionTimeoutMs` is ended, which
 * aborts its holders' signals; a slow answer is an answer. With no lock held there
 * is no timer.
 */
export class SessionLivenessMonitor<C extends { kill(reason: Error): void }> {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  // Created in a neutral scope so the interval never pins a request's context.
  private readonly scope = new AsyncResource('nestjs-serialized.pg-liveness');

  /**
   * @param sessions the sessions to check right now (read on every tick, so
   *   holding and releasing costs the monitor nothing)
   * @param anyHeld whether a lock is held (the timer stops on the first tick without one)
   * @param check checks one session (the audit); a session that fails it has been ended by it
   * @param intervalMs time between checks of one session
   */
  constructor(
    private readonly sessions: () => Iterable<C>,
    private readonly anyHeld: () => boolean,
    private readonly check: (session: C) => Promise<unknown>,
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
    if (!this.anyHeld()) return this.disarm();
    for (const session of this.sessions()) {
      // A failed check ends the session, which tells its holders.
      this.check(session).catch((error: Error) => session.kill(error));
    }
  }

  private disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
