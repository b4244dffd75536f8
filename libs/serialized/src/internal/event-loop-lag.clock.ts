import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/** How often the clock looks at the event loop while it is in use. */
const TICK_MS = 20;
/** Lag per tick below this is scheduling noise, not a stall. */
const TOLERANCE_MS = 20;
/** Stops ticking when nobody has read it for this long (by default). */
const IDLE_STOP_MS = 2000;

/**
 * A clock that stands still while this process does not run: `now()` is
 * `performance.now()` minus every stretch in which the event loop could not turn
 * (a long synchronous burst, a GC pause, a starved CPU). Bounds that judge
 * *another* party's silence (no reply from Redis for N ms) count in it, so that
 * time this process itself was not running is never taken for backend silence
 * (docs/semantics.md). Bounds on the caller's own budget (`waitTimeoutMs`) and leases,
 * which run on the server's clock, stay on `performance.now()`.
 *
 * While in use a cheap unref'd ticker (in the clock's own async scope) measures
 * how late each tick fires; a stall still in progress when `now()` is read (say,
 * from a timer that fired before the ticker after a long synchronous burst)
 * counts too. Reading it starts the ticker; nobody reading it for `idleStopMs`
 * stops it, so an idle provider keeps no timer beyond that. A user whose bounds
 * are pending reads it at least once per bound (when its deadline fires), so
 * `idleStopMs` must exceed the longest bound measured on it.
 */
export class EventLoopLagClock {
  private timer: NodeJS.Timeout | undefined;
  private lastTickAt = 0;
  private lastReadAt = 0;
  /** Time this process was measured not running, in ms. */
  private lost = 0;
  private readonly scope: AsyncResource;
  private readonly onTick = (): void => this.tick();

  constructor(
    name = 'nestjs-serialized.event-loop-lag',
    private readonly idleStopMs = IDLE_STOP_MS,
  ) {
    this.scope = new AsyncResource(name);
  }

  /** Milliseconds this process has been running (`performance.now()` without its stalls). */
  now(): number {
    const at = performance.now();
    this.lastReadAt = at;
    if (!this.timer) {
      this.start(at);
      return at - this.lost;
    }
    return at - this.lost - this.overdue(at);
  }

  /** Time measured not running so far, in ms (for diagnostics). */
  get stalledMs(): number {
    return this.lost + (this.timer ? this.overdue(performance.now()) : 0);
  }

  /** Stops the ticker now (it starts again on the next reading). */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private start(at: number): void {
    this.lastTickAt = at;
    this.timer = this.scope.runInAsyncScope(() => setInterval(this.onTick, TICK_MS));
    this.timer.unref();
  }

  /** How much of the time since the last tick is a stall (the tick is that much overdue). */
  private overdue(at: number): number {
    return Math.max(0, at - this.lastTickAt - TICK_MS - TOLERANCE_MS);
  }

  private tick(): void {
    const at = performance.now();
    this.lost += this.overdue(at);
    this.lastTickAt = at;
    if (at - this.lastReadAt > this.idleStopMs) this.stop();
  }
}
