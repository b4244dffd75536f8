import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/**
 * Dates what this process reads from a socket when the read itself says nothing
 * about when it was sent (a pub/sub message answers no request of ours).
 *
 * While started, a cheap ticker (one unref'd interval, in the monitor's own async
 * scope) marks the turns of the event loop. A message read now reached the socket
 * after the loop last read its sockets, and the loop did so in the turn of the
 * last tick or later; so the time of that tick is a safe "no earlier than" for
 * the message. Within one turn, timers run before the sockets are read: after a
 * stalled loop (a synchronous burst, a long GC pause) the overdue tick fires
 * first, in the very turn that then reads what piled up during the stall; for
 * that turn the tick before it is the one that counts.
 *
 * Provider-neutral: a provider starts it while something may arrive that needs
 * dating (waiters that may be handed a lock), and stops it when nothing may.
 */
export class EventLoopStallMonitor {
  private timer: NodeJS.Timeout | undefined;
  private lastTickAt = 0;
  /** Set during the turn of a tick: the tick before it. */
  private turnAfter: number | undefined;
  private readonly scope: AsyncResource;
  private readonly onTick = (): void => this.tick();
  private readonly onTurnEnd = (): void => {
    this.turnAfter = undefined;
  };

  constructor(
    /** How often it ticks; what a reading may be misdated by at most (plus the loop's own delay) when the loop is healthy. */
    readonly intervalMs: number,
    name = 'nestjs-serialized.event-loop-stall',
  ) {
    this.scope = new AsyncResource(name);
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Starts ticking (idempotent); from now on the loop counts as responsive. */
  start(): void {
    if (this.timer) return;
    this.lastTickAt = performance.now();
    this.turnAfter = undefined;
    this.timer = this.scope.runInAsyncScope(() => setInterval(this.onTick, this.intervalMs));
    this.timer.unref();
  }

  /** Stops ticking (idempotent): nothing is left armed. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The latest `performance.now()` time at which the event loop was demonstrably
   * responsive before the current stretch of work: whatever is read from a socket
   * now arrived no earlier than about this moment (network latency aside). When
   * the loop stalled, this is where the stall began. Not started: nothing is
   * known (`-Infinity`).
   */
  respondedAt(): number {
    if (!this.timer) return -Infinity;
    return this.turnAfter ?? this.lastTickAt;
  }

  private tick(): void {
    const previous = this.lastTickAt;
    this.lastTickAt = performance.now();
    if (this.turnAfter !== undefined) return;
    // What this turn reads from its sockets may have waited there since the previous tick.
    this.turnAfter = previous;
    this.scope.runInAsyncScope(() => setImmediate(this.onTurnEnd));
  }
}
