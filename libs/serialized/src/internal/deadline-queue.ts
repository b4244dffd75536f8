import { AsyncResource } from 'node:async_hooks';

/**
 * The longest delay a Node.js timer takes (2^31 - 1 ms, 24.8 days). A longer one
 * fires after 1 ms with a TimeoutOverflowWarning; a deadline further away is
 * reached by re-arming at this bound, so any safe-integer wait is accepted.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** A scheduled call; pass it to `cancel`. An object may be its own deadline (see `add`). */
export interface Deadline {
  /** When it is due (`performance.now()` time); set by the queue. */
  at: number;
  /** Position in the heap, -1 once fired or cancelled. */
  index: number;
  fire(): void;
}

/** Options of a {@link DeadlineQueue}. */
export interface DeadlineQueueOptions {
  /**
   * Whether pending deadlines may let the process exit. The in-memory provider keeps
   * its timer referenced (a waiter due to time out is work in progress); the network
   * providers unref theirs, since their sockets decide whether the process lives.
   */
  unref?: boolean;
  /** Async resource name of the timer's scope, for diagnostics. */
  name?: string;
}

/**
 * Many deadlines, one timer. Waiters, command bounds and renewals get a heap entry
 * instead of a `setTimeout` each: a hundred waiters cost one timer, and the timer
 * is created in the provider's own async scope, so it never pins a request's
 * AsyncLocalStorage context. With no deadline pending there is no timer at all.
 * A deadline beyond what a timer takes costs one wake-up per 24.8 days.
 */
export class DeadlineQueue {
  private readonly heap: Deadline[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private readonly scope: AsyncResource;
  private readonly unref: boolean;
  private readonly onTimer = (): void => this.expire();

  constructor(options: DeadlineQueueOptions = {}) {
    this.scope = new AsyncResource(options.name ?? 'nestjs-serialized.deadlines');
    this.unref = options.unref ?? false;
  }

  get size(): number {
    return this.heap.length;
  }

  /** Whether a timer is armed (tests check that an idle queue holds none). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  schedule(delayMs: number, fire: () => void): Deadline {
    const entry: Deadline = { at: 0, index: -1, fire };
    this.add(entry, delayMs);
    return entry;
  }

  /**
   * Schedules `entry` itself: its `fire()` runs when due. A waiter that is its own
   * deadline costs neither a closure nor a heap entry of its own.
   */
  add(entry: Deadline, delayMs: number): void {
    entry.at = performance.now() + delayMs;
    entry.index = this.heap.length;
    this.heap.push(entry);
    this.up(entry.index);
    if (entry.at < this.timerAt) this.arm();
  }

  /**
   * Cancelling leaves an armed timer alone unless nothing is left: it may then fire
   * before the next deadline, find nothing due and re-arm. A hot key, whose head
   * waiter (the earliest deadline) leaves at every hand-off, thus costs no
   * clearTimeout + setTimeout per hand-off.
   */
  cancel(entry: Deadline): void {
    const i = entry.index;
    if (i < 0) return;
    entry.index = -1;
    const last = this.heap.pop()!;
    if (i < this.heap.length) {
      this.heap[i] = last;
      last.index = i;
      this.down(i);
      this.up(last.index);
    }
    if (this.heap.length === 0) this.arm();
  }

  /** Drops every deadline without firing it. */
  clear(): void {
    for (const entry of this.heap) entry.index = -1;
    this.heap.length = 0;
    this.arm();
  }

  private arm(): void {
    const next = this.heap[0]?.at ?? Infinity;
    if (next === this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = next;
    if (next === Infinity) return;
    // Past the bound the timer fires early, finds nothing due and is armed again (see expire).
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, Math.ceil(next - performance.now())));
    this.timer = this.scope.runInAsyncScope(() => setTimeout(this.onTimer, delay));
    if (this.unref) this.timer.unref();
  }

  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    // Timers may fire up to a millisecond early relative to performance.now().
    const now = performance.now() + 1;
    while (this.heap.length && this.heap[0].at <= now) {
      const entry = this.heap[0];
      this.cancel(entry);
      try {
        entry.fire();
      } catch {
        // A deadline callback settles a promise or starts a command; it has no one to report to.
      }
    }
    this.arm();
  }

  private up(i: number): void {
    const heap = this.heap;
    const entry = heap[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= entry.at) break;
      heap[i] = heap[parent];
      heap[i].index = i;
      i = parent;
    }
    heap[i] = entry;
    entry.index = i;
  }

  private down(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const entry = heap[i];
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap[child + 1].at < heap[child].at) child++;
      if (heap[child].at >= entry.at) break;
      heap[i] = heap[child];
      heap[i].index = i;
      i = child;
    }
    heap[i] = entry;
    entry.index = i;
  }
}
