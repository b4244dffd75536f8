import { AsyncResource } from 'node:async_hooks';

/**
 * The longest delay a Node.js timer takes (2^31 - 1 ms, 24.8 days). A longer one
 * fires after 1 ms with a TimeoutOverflowWarning; a deadline further away is
 * reached by re-arming at this bound, so any safe-integer wait is accepted.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * A scheduled call; pass it to `cancel`. An object may be its own deadline (see `add`).
 * Why an interface: an object may be its own deadline (no object allocated per
 * deadline), so the heap holds whatever has these fields; `DeadlineLine`, the
 * queue's own kind, is the one class that says so with `implements`.
 */
export interface Deadline {
  /** When it is due (`performance.now()` time); set by the queue. */
  at: number;
  /** Position in the heap, -1 once fired or cancelled. */
  index: number;
  fire(): void;
}

/**
 * A deadline that waits in line behind others of the same delay (see
 * `DeadlineQueue.addInLine`): the queue links it, so it needs these fields.
 * Why an interface: the queue is the one writer of these fields, and the object
 * that carries them is the caller itself (no node allocated per wait).
 */
export interface LinedDeadline {
  /** When it is due (`performance.now()` time); set by the queue. */
  at: number;
  /** The line it waits in; undefined once fired or cancelled. */
  line: DeadlineLine | undefined;
  before: LinedDeadline | undefined;
  after: LinedDeadline | undefined;
  fire(): void;
}

/**
 * The deadlines of one delay, in the order they were added, which is their time
 * order: adding and cancelling one is linking and unlinking it. The line is a
 * single entry of the heap, due when its first deadline is; a first deadline that
 * leaves makes the line due early, and it then only re-schedules itself.
 */
export class DeadlineLine implements Deadline {
  at = 0;
  index = -1;
  first: LinedDeadline | undefined = undefined;
  last: LinedDeadline | undefined = undefined;
  constructor(
    private readonly queue: DeadlineQueue,
    readonly delayMs: number,
  ) {}

  fire(): void {
    this.queue.fireLine(this);
  }
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
 * (or, for the many of one delay, a place in that delay's line) instead of a `setTimeout` each: a hundred waiters cost one timer, and the timer
 * is created in the provider's own async scope, so it never pins a request's
 * AsyncLocalStorage context. With no deadline pending there is no timer at all.
 * A deadline beyond what a timer takes costs one wake-up per 24.8 days.
 */
export class DeadlineQueue {
  private readonly heap: Deadline[] = [];
  /** The lines in the heap, by delay (see `addInLine`). */
  private readonly lines = new Map<number, DeadlineLine>();
  private inLines = 0;
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
    return this.heap.length - this.lines.size + this.inLines;
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
    this.insert(entry);
  }

  /** Puts `entry`, its `at` set, in the heap. */
  private insert(entry: Deadline): void {
    entry.index = this.heap.length;
    this.heap.push(entry);
    this.up(entry.index);
    if (entry.at < this.timerAt) this.arm();
  }

  /**
   * Schedules `entry` behind the earlier ones of the same delay: O(1) to add and to
   * cancel (`cancelInLine`) whatever the number pending, where a heap entry costs
   * O(log n). For the waiters of a lock, whose delay is mostly the same `waitTimeoutMs`.
   */
  addInLine(entry: LinedDeadline, delayMs: number): void {
    entry.at = performance.now() + delayMs;
    let line = this.lines.get(delayMs);
    if (!line) {
      line = new DeadlineLine(this, delayMs);
      this.lines.set(delayMs, line);
    }
    entry.line = line;
    entry.before = line.last;
    entry.after = undefined;
    if (line.last) line.last.after = entry;
    else line.first = entry;
    line.last = entry;
    this.inLines++;
    if (line.index < 0) {
      // Its first deadline, not this one: a callback of the firing line may add to it.
      line.at = line.first!.at;
      this.insert(line);
    }
  }

  /** Cancels an `addInLine` deadline; nothing if it fired or was cancelled. */
  cancelInLine(entry: LinedDeadline): void {
    const line = entry.line;
    if (!line) return;
    this.unlinkFromLine(line, entry);
    // An empty line leaves the heap (and, when it was the last entry, the timer goes).
    if (!line.first && this.lines.get(line.delayMs) === line) {
      this.lines.delete(line.delayMs);
      this.cancel(line);
    }
  }

  /** @internal A line is due: fires its due deadlines, then waits for its new first one. */
  fireLine(line: DeadlineLine): void {
    // Timers may fire up to a millisecond early relative to performance.now().
    const now = performance.now() + 1;
    for (let entry = line.first; entry && entry.at <= now; entry = line.first) {
      this.unlinkFromLine(line, entry);
      try {
        entry.fire();
      } catch {
        // As in expire: nobody to report to.
      }
    }
    if (this.lines.get(line.delayMs) !== line) return; // emptied while firing
    if (!line.first) {
      this.lines.delete(line.delayMs);
      return;
    }
    if (line.index >= 0) return; // back in the heap already: a callback added to it
    line.at = line.first.at;
    this.insert(line);
  }

  private unlinkFromLine(line: DeadlineLine, entry: LinedDeadline): void {
    if (entry.before) entry.before.after = entry.after;
    else line.first = entry.after;
    if (entry.after) entry.after.before = entry.before;
    else line.last = entry.before;
    entry.line = entry.before = entry.after = undefined;
    this.inLines--;
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
    for (const line of this.lines.values()) while (line.first) this.unlinkFromLine(line, line.first);
    this.lines.clear();
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
