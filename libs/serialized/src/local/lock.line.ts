import type { LineCaller } from './line.caller';

/** Where a key's turn stands in this process. */
export const enum Turn {
  /** A caller of this process is asking the backend for the key. */
  Asking,
  /** A caller of this process holds the key. */
  Held,
  /** The holder let go; its release is on its way to the backend (the next caller asks after it). */
  Releasing,
  /**
   * Nobody of this process holds the key or lets it go; its callers (if any) ask
   * the backend on their own (a backend that `asksOn: 'arrival'`).
   */
  Free,
}

/**
 * One key's line in this process: its callers in arrival order (a linked list: a
 * caller that times out or aborts leaves in O(1)), where the key's turn stands,
 * whether the caller asking the backend waits there behind another process, the
 * release in flight, and how many local hand-offs in a row the key has seen. Its
 * fields change only through the transitions below, called by `LockLines`.
 */
export class LockLine<L> {
  private firstCaller: LineCaller<L> | undefined = undefined;
  private lastCaller: LineCaller<L> | undefined = undefined;
  private count = 0;
  private turnNow: Turn;
  private waitingBehind = false;
  private inFlight: Promise<unknown> | undefined = undefined;
  private handOns = 0;
  private holding: L | undefined;

  constructor(
    readonly key: string,
    turn: Turn,
    /** The lock holding the key when the line is made (`Turn.Held`). */
    holder?: L,
  ) {
    this.turnNow = turn;
    this.holding = holder;
  }

  /** The caller of this process holding the key (its lock), while one does. */
  get holder(): L | undefined {
    return this.holding;
  }

  /** The first caller waiting for its turn. */
  get head(): LineCaller<L> | undefined {
    return this.firstCaller;
  }

  /** The last caller waiting for its turn (the newest). */
  get tail(): LineCaller<L> | undefined {
    return this.lastCaller;
  }

  /** Callers waiting for their turn (the holder and the caller asking the backend are not among them). */
  get waiting(): number {
    return this.count;
  }

  get turn(): Turn {
    return this.turnNow;
  }

  /** The caller asking the backend waits there behind another process: it counts as a waiter of this process. */
  get behind(): boolean {
    return this.waitingBehind;
  }

  /** The release on its way to the backend, if any (a try of the key waits for it). */
  get releasing(): Promise<unknown> | undefined {
    return this.turnNow === Turn.Releasing ? this.inFlight : undefined;
  }

  /** Local hand-offs in a row since the backend last granted the key. */
  get passes(): number {
    return this.handOns;
  }

  /** `join`: a caller takes its place at the tail. */
  join(caller: LineCaller<L>): void {
    caller.linkBehind(this.lastCaller);
    if (!this.lastCaller) this.firstCaller = caller;
    this.lastCaller = caller;
    this.count++;
  }

  /** `leave`: a caller leaves its place; false when it had none (it already left, or never waited). */
  leave(caller: LineCaller<L>): boolean {
    if (caller.prev === undefined && this.firstCaller !== caller) return false;
    if (!caller.prev) this.firstCaller = caller.next;
    if (!caller.next) this.lastCaller = caller.prev;
    caller.unlink();
    this.count--;
    return true;
  }

  /** `ask`: the key's turn goes to a caller who asks the backend (a new run of local hand-offs starts). */
  ask(): void {
    this.turnNow = Turn.Asking;
    this.waitingBehind = false;
    this.inFlight = undefined;
    this.handOns = 0;
    this.holding = undefined;
  }

  /** `waits-behind`: the asking caller waits in the backend behind another process. */
  waitsBehind(): void {
    this.waitingBehind = true;
  }

  /** `hold`: the backend granted the key to the asking caller, whose lock is `lock`. */
  hold(lock: L): void {
    this.turnNow = Turn.Held;
    this.waitingBehind = false;
    this.holding = lock;
  }

  /** `hand-on`: the holder's key passed to the next caller of this process (its lock `lock`), the backend not asked. */
  handOn(lock: L): void {
    this.turnNow = Turn.Held;
    this.handOns++;
    this.holding = lock;
  }

  /**
   * `let-go` answered (a backend that asks on arrival): `release` reached the
   * backend, which has the key back or handed it on; a holder granted meanwhile
   * keeps it.
   */
  gone(release: Promise<unknown>): void {
    if (this.inFlight !== release) return;
    this.inFlight = undefined;
    if (this.turnNow === Turn.Releasing) this.turnNow = Turn.Free;
  }

  /** `let-go`: the holder let go, and `release` is on its way to the backend. */
  letGo(release: Promise<unknown>): void {
    this.turnNow = Turn.Releasing;
    this.inFlight = release;
    this.holding = undefined;
  }
}
