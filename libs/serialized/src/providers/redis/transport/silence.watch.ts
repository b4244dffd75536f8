import type { Deadline, DeadlineQueue } from '../../../internal/deadline.queue';
import type { EventLoopLagClock } from '../../../internal/event-loop-lag.clock';

/**
 * One lazily re-armed deadline over waits bounded on the lag-free clock (the readiness
 * gate's callers, a reply stream's calls): a bound counts time the server had, not time
 * this process was stalled. A deadline found overdue is confirmed once more after I/O had
 * its turn — timers run before I/O in a loop turn, so after a stalled event loop the
 * answer may already wait in the socket — then `expire` runs, and the watch re-arms for
 * whatever still waits.
 */
export class SilenceWatch {
  private watch: Deadline | undefined;
  /** An overdue deadline is being confirmed after I/O had its turn. */
  private confirming = false;
  private readonly onWatch = (): void => {
    this.watch = undefined;
    this.look();
  };

  constructor(
    private readonly deadlines: DeadlineQueue,
    private readonly clock: EventLoopLagClock,
    /** When the oldest wait ends on the lag-free clock; `undefined` when nothing waits. */
    private readonly ends: () => number | undefined,
    /** Ends the waits that are over (after I/O had its turn). */
    private readonly expire: () => void,
  ) {}

  /** A wait began whose bound ends at `at`: watched unless a look is already due. */
  arm(at: number): void {
    if (!this.watch && !this.confirming) this.watchAt(at);
  }

  /** Nothing waits any more. */
  cancel(): void {
    if (this.watch) this.deadlines.cancel(this.watch);
    this.watch = undefined;
  }

  private watchAt(at: number): void {
    this.watch = this.deadlines.schedule(Math.max(0, at - this.clock.now()), this.onWatch);
  }

  /** The deadline: nothing to do, a later look, or an overdue wait to confirm. */
  private look(): void {
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
      this.expire();
      const next = this.ends();
      if (next !== undefined && !this.watch) this.watchAt(next);
    });
  }
}
