import type { HandOffMode } from '../acquire-options.interface';
import type { DeadlineLine, LinedDeadline } from '../internal/deadline.queue';

/** How a caller asks for a key: `wait` queues, `try` takes it only if it is free now. */
export type CallerMode = 'wait' | 'try';

/**
 * What a waiting caller's own events turn into: its deadline came, its signal
 * aborted, or (a backend asked on arrival) the backend granted or refused it. One
 * implementer (`LockLines`): these fire on their own, not as the answer to a call,
 * so they can only be handed on to the one writer of the line.
 */
export interface CallerEnds {
  timedOut(caller: LineCaller<unknown>): void;
  aborted(caller: LineCaller<unknown>): void;
  answered(caller: LineCaller<unknown>, lock: unknown): void;
  failed(caller: LineCaller<unknown>, error: unknown): void;
}

/** The caller whose promise is being made: lets one shared executor fill in its resolvers (no closure per caller). */
let settling: LineCaller<unknown> | undefined;
function captureResolvers(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  settling!.resolveWith = resolve;
  settling!.rejectWith = reject;
}

/**
 * One call for a key in this process, from its arrival until it holds the key or
 * gives up: the node of its key's line (linked by `LockLine` through `linkBehind`
 * and `unlink`), its own
 * deadline (the `DeadlineQueue` writes the deadline fields; O(1) in and out), and
 * its own abort listener (no closure). What a backend needs to ask for the key on
 * its behalf — its budget, signal, bound and lease — is read from here.
 */
export class LineCaller<L> implements LinedDeadline {
  /** Its neighbours in the line (changed by `linkBehind` and `unlink` only). */
  prev: LineCaller<L> | undefined = undefined;
  next: LineCaller<L> | undefined = undefined;
  /** Deadline fields (written by `DeadlineQueue` only). */
  at = 0;
  line: DeadlineLine | undefined = undefined;
  before: LinedDeadline | undefined = undefined;
  after: LinedDeadline | undefined = undefined;
  /** Its promise's resolvers (written once, by the shared executor). */
  resolveWith!: (value: L | null) => void;
  rejectWith!: (error: unknown) => void;
  private answered = false;
  private started: number;
  private there = false;
  /** The caller's answer: the lock, `null` (a try that found the key busy), or the error. */
  readonly promise: Promise<L | null>;

  constructor(
    private readonly ends: CallerEnds,
    readonly key: string,
    readonly mode: CallerMode,
    /** The whole wait budget, counted from `startedAt` (time spent in the line included). */
    readonly waitTimeoutMs: number,
    /** `performance.now()` at the call. */
    startedAt: number,
    readonly signal: AbortSignal | undefined,
    /** Most callers of this process that may wait for the key (the holder does not count). */
    readonly maxPending: number,
    /** The lease the call asked for (undefined: the provider's). */
    readonly leaseMs: number | undefined,
    /** How the caller, once it holds the key, may hand it on (undefined: the provider's mode). */
    readonly handoff: HandOffMode | undefined,
    /** Most holders of the key at once it accepts, itself included (`concurrency`; 1: alone, unless `shared`). */
    readonly limit: number = 1,
    /** It holds the key together with other shared holders (`shared`), never beside one that is not. */
    readonly shared: boolean = false,
  ) {
    this.started = startedAt;
    settling = this as LineCaller<unknown>;
    this.promise = new Promise<L | null>(
      captureResolvers as (resolve: (value: L | null) => void, reject: (error: unknown) => void) => void,
    );
    settling = undefined;
  }

  /** `join`: takes its place behind `last` (undefined: it is first in the line). */
  linkBehind(last: LineCaller<L> | undefined): void {
    this.prev = last;
    this.next = undefined;
    if (last) last.next = this;
  }

  /** `leave`: its neighbours close the gap it leaves. */
  unlink(): void {
    if (this.prev) this.prev.next = this.next;
    if (this.next) this.next.prev = this.prev;
    this.prev = this.next = undefined;
  }

  /** When its wait budget started (`performance.now()`). */
  get startedAt(): number {
    return this.started;
  }

  /**
   * `stamp`: its budget starts `now` (a caller that asks on arrival: the first turn
   * of the event loop after its call, so a caller's own synchronous burst does not
   * spend it; see `LockLines`).
   */
  stamp(now: number): void {
    this.started = now;
  }

  /** Whether the caller has its answer. */
  get settled(): boolean {
    return this.answered;
  }

  /** It holds `lock` (or, a try, learns the key is busy: `null`). */
  resolve(lock: L | null): void {
    if (this.answered) return;
    this.answered = true;
    this.resolveWith(lock);
  }

  /** It gives up with `error`. */
  reject(error: unknown): void {
    if (this.answered) return;
    this.answered = true;
    this.rejectWith(error);
  }

  /**
   * Arrival mode: whether the backend keeps it waiting (a place in its queue, or a
   * ride), counted as a waiter of this process (see `LockLines.waitsThere`).
   */
  get waitingThere(): boolean {
    return this.there;
  }

  /** `waits-there`: it is counted as a waiter of this process (by its line, once). */
  waitsThere(): void {
    this.there = true;
  }

  /**
   * Arrival mode: the backend granted it the key. Told to the layer at once, not
   * through a promise, so the layer's count of this process's waiters is never
   * behind the backend's.
   */
  granted(lock: L): void {
    this.ends.answered(this as LineCaller<unknown>, lock);
  }

  /** Arrival mode: the backend refused it (`maxPending`, its error, shutdown), told to the layer at once. */
  refused(error: unknown): void {
    this.ends.failed(this as LineCaller<unknown>, error);
  }

  /** Its budget ran out (the deadline queue calls it). */
  fire(): void {
    this.ends.timedOut(this as LineCaller<unknown>);
  }

  /** Its signal aborted (it is its own listener: no closure). */
  handleEvent(): void {
    this.ends.aborted(this as LineCaller<unknown>);
  }
}
