import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/** A scheduled call; pass it to `cancel`. */
export interface LazyDeadline {
  readonly at: number;
  /** Position in the heap, -1 once fired or cancelled. */
  index: number;
  readonly fire: () => void;
}

/**
 * Many deadlines, one timer, and almost no timer churn: the Redis provider puts a
 * deadline on every held lock (its renewal), every waiter (its wait budget) and
 * every connection with commands outstanding (the silence bound), and most are
 * cancelled long before they are due.
 * Cancelling never touches the timer: it fires at the earliest deadline ever
 * scheduled, finds nothing due and re-arms for the next one. So an uncontended
 * acquire + release costs two heap operations and no `setTimeout`.
 *
 * Like `DeadlineQueue`, the timer is created in the provider's own async scope (it
 * never pins a request's AsyncLocalStorage context), and it is unref'd: pending
 * deadlines never keep a process alive on their own, and with nothing scheduled
 * the timer runs out and is gone.
 */
export class LazyDeadlineQueue {
  private readonly heap: LazyDeadline[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private readonly scope = new AsyncResource('nestjs-serialized.redis-deadlines');
  private readonly onTimer = (): void => this.expire();

  get size(): number {
    return this.heap.length;
  }

  /** Whether a timer is armed (it may be, briefly, with nothing left to fire). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  schedule(delayMs: number, fire: () => void): LazyDeadline {
    const entry: LazyDeadline = { at: performance.now() + delayMs, index: this.heap.length, fire };
    this.heap.push(entry);
    this.up(entry.index);
    if (entry.at < this.timerAt) this.arm(entry.at);
    return entry;
  }

  cancel(entry: LazyDeadline): void {
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
  }

  /** Drops every deadline without firing it, and the timer with them. */
  clear(): void {
    for (const entry of this.heap) entry.index = -1;
    this.heap.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    const delay = Math.max(0, Math.ceil(at - performance.now()));
    this.timer = this.scope.runInAsyncScope(() => setTimeout(this.onTimer, delay));
    this.timer.unref();
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
    // A callback may have armed the timer for a later deadline than one still queued.
    if (this.heap.length && this.heap[0].at < this.timerAt) this.arm(this.heap[0].at);
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
