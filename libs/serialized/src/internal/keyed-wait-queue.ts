import { DeadlineQueue, type LinedDeadline } from './deadline-queue';
import type { PendingBudget } from './pending-budget';

/** The errors a waiter may end with; one object per provider, called only when needed. */
export interface WaitErrors {
  /** The error for a waiter whose time ran out. */
  timeoutError(key: string, timeoutMs: number): Error;
  /** The error when `maxPending` waiters already queue. */
  busyError(key: string, maxPending: number): Error;
}

/** How one caller waits for a key. */
export interface WaitOptions extends WaitErrors {
  /** 0 means: do not wait at all. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Most waiters for this key (the holder does not count). */
  maxPending: number;
}

interface KeyEntry {
  key: string;
  first: Waiter | undefined;
  last: Waiter | undefined;
  waiting: number;
}

/**
 * One caller in a key's line. It is its own deadline (no closure; it waits in the
 * line of its delay, O(1) in and out, not in the heap), and listens to an abort
 * signal only when it was given one: waiting costs this object and the caller's promise.
 */
class Waiter implements LinedDeadline {
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  at = 0;
  line: LinedDeadline['line'] = undefined;
  before: LinedDeadline | undefined = undefined;
  after: LinedDeadline | undefined = undefined;
  resolve!: (granted: unknown) => void;
  reject!: (error: unknown) => void;
  constructor(
    private readonly queue: KeyedWaitQueue<unknown>,
    readonly entry: KeyEntry,
    readonly timeoutMs: number,
    readonly maxPending: number,
    readonly signal: AbortSignal | undefined,
    readonly errors: WaitErrors,
  ) {}

  /** Its time ran out. */
  fire(): void {
    this.queue.leave(this, this.errors.timeoutError(this.entry.key, this.timeoutMs));
  }

  /** The signal aborted (the waiter is its own listener: no closure). */
  handleEvent(): void {
    this.queue.leave(this, this.signal!.reason);
  }
}

/**
 * The entry of every key held with nobody waiting (frozen: it is shared): taking a
 * free key allocates nothing; the first waiter gives the key an entry of its own.
 */
const HELD: KeyEntry = Object.freeze({ key: '', first: undefined, last: undefined, waiting: 0 }) as KeyEntry;

/** The key of the entry that keeps `entries` from ever being empty (no string is it). */
const IDLE: unique symbol = Symbol('idle');

/** The waiter whose promise is being made: lets one shared executor fill in its resolvers. */
let settling: Waiter | undefined;
const captureResolvers = (resolve: (granted: unknown) => void, reject: (error: unknown) => void): void => {
  settling!.resolve = resolve;
  settling!.reject = reject;
};

/**
 * Strict FIFO ownership of keys inside one process: the in-memory provider is
 * this queue, and the PostgreSQL provider uses it as its first level so that at
 * most one caller per key and process talks to the server.
 *
 * A key has an entry only while it is held; the entry's waiters form a linked
 * list, so a waiter that times out or is aborted leaves at once (O(1)), and
 * release hands the key straight to the head waiter (no barging: a newcomer sees
 * the key held until the head has taken it). An idle key leaves nothing behind.
 *
 * `T` is what a waiter's promise resolves with: what `grant` makes for the key at
 * the hand-off (the in-memory provider's lock, so that its waiter needs no
 * continuation of its own to make one), or nothing without `grant`.
 */
export class KeyedWaitQueue<T = void> {
  /**
   * Held keys, and one entry that is no key (`IDLE`): V8 shrinks a Map emptied by
   * `delete` — a runtime call and a new table — so without it every uncontended
   * take-and-release of a lone key would pay that twice over.
   */
  private readonly entries = new Map<string | typeof IDLE, KeyEntry>([[IDLE, HELD]]);
  /** Entries of their own (a key someone waited for since it was taken); none: every entry is `HELD`. */
  private lined = 0;

  /**
   * @param budget the provider's `maxPendingTotal`, shared by the waiters of every key (none: unbounded)
   * @param grant called at each hand-off, as the head waiter becomes the holder; its result resolves that waiter's promise
   */
  constructor(
    private readonly deadlines: DeadlineQueue = new DeadlineQueue(),
    private readonly budget?: PendingBudget,
    private readonly grant?: (key: string) => T,
  ) {}

  /** Keys held or waited for (0 when idle: nothing is retained). */
  get size(): number {
    return this.entries.size - 1;
  }

  isHeld(key: string): boolean {
    return this.entries.has(key);
  }

  waiting(key: string): number {
    return this.entries.get(key)?.waiting ?? 0;
  }

  /** Takes the key if nobody holds or waits for it. */
  tryTake(key: string): boolean {
    if (this.entries.has(key)) return false;
    this.entries.set(key, HELD);
    return true;
  }

  /**
   * {@link tryTake} for a key the caller has just found free with {@link isHeld},
   * nothing having run in between: one Map write instead of a second look-up.
   */
  takeFree(key: string): void {
    this.entries.set(key, HELD);
  }

  /**
   * Takes the key at once (returns `undefined`) or returns a promise that resolves
   * when the key is handed over, in arrival order. The promise rejects with the
   * timeout or busy error, or with the signal's reason; the caller then holds nothing.
   */
  take(key: string, options: WaitOptions): Promise<T> | undefined {
    return this.wait(key, options.timeoutMs, options.maxPending, options.signal, options);
  }

  /** {@link take} without an options object per call: what the in-memory provider's hot path uses. */
  wait(key: string, timeoutMs: number, maxPending: number, signal: AbortSignal | undefined, errors: WaitErrors): Promise<T> | undefined {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let entry = this.entries.get(key);
    if (!entry) {
      this.entries.set(key, HELD);
      return undefined;
    }
    if (timeoutMs <= 0) return Promise.reject(errors.timeoutError(key, timeoutMs));
    if (entry.waiting >= maxPending) return Promise.reject(errors.busyError(key, maxPending));
    if (this.budget && !this.budget.take()) return Promise.reject(this.budget.busyError(key));

    if (entry === HELD) {
      this.entries.set(key, (entry = { key, first: undefined, last: undefined, waiting: 0 }));
      this.lined++;
    }
    const waiter = new Waiter(this as KeyedWaitQueue<unknown>, entry, timeoutMs, maxPending, signal, errors);
    settling = waiter;
    const promise = new Promise<T>(captureResolvers as (resolve: (value: T) => void, reject: (error: unknown) => void) => void);
    settling = undefined;
    waiter.prev = entry.last;
    if (entry.last) entry.last.next = waiter;
    else entry.first = waiter;
    entry.last = waiter;
    entry.waiting++;
    this.deadlines.addInLine(waiter, timeoutMs);
    signal?.addEventListener('abort', waiter, { once: true });
    return promise;
  }

  /**
   * The holder lets go: the head waiter now holds the key, or the key is idle and
   * its entry is gone. Returns whether a waiter took it.
   */
  release(key: string): boolean {
    // Nobody waits for any key (the uncontended case): one Map operation.
    if (this.lined === 0) {
      this.entries.delete(key);
      return false;
    }
    const entry = this.entries.get(key);
    if (!entry) return false;
    const head = entry.first;
    if (!head) {
      if (entry !== HELD) this.lined--;
      this.entries.delete(key);
      return false;
    }
    this.unlink(head);
    head.resolve(this.grant?.(key));
    return true;
  }

  /**
   * `ahead` more callers of this process wait for `key` before its first waiter
   * (the PostgreSQL provider's head, found waiting in the server): every waiter
   * that, counting them, is more than its own `maxPending` gets its busy error.
   * The oldest keep their places.
   */
  refuseSurplus(key: string, ahead: number): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    let place = ahead;
    for (let waiter = entry.first; waiter; ) {
      const next = waiter.next;
      if (place < waiter.maxPending) {
        place++;
      } else {
        this.unlink(waiter);
        waiter.reject(waiter.errors.busyError(entry.key, waiter.maxPending));
      }
      waiter = next;
    }
  }

  /** Rejects every waiter of every key (shutdown); holders keep their keys. */
  rejectAll(error: (key: string) => Error): void {
    for (const entry of this.entries.values()) {
      while (entry.first) {
        const waiter = entry.first;
        this.unlink(waiter);
        waiter.reject(error(entry.key));
      }
    }
  }

  /** @internal A waiter gives up (timeout, abort). */
  leave(waiter: Waiter, error: unknown): void {
    if (waiter.entry.first !== waiter && !waiter.prev) return; // already handed over or gone
    this.unlink(waiter);
    waiter.reject(error);
  }

  private unlink(waiter: Waiter): void {
    const entry = waiter.entry;
    if (waiter.prev) waiter.prev.next = waiter.next;
    else entry.first = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else entry.last = waiter.prev;
    waiter.prev = waiter.next = undefined;
    entry.waiting--;
    this.budget?.give();
    this.deadlines.cancelInLine(waiter);
    waiter.signal?.removeEventListener('abort', waiter);
  }
}
