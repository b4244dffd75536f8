import type { LineCaller } from './line.caller';

const NONE: readonly never[] = Object.freeze([]);

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
  /** Arrival mode: callers in line the backend keeps waiting (see `waitsThere`). */
  private there = 0;
  private turnNow: Turn;
  private waitingBehind = false;
  private inFlight: Promise<unknown> | undefined = undefined;
  private handOns = 0;
  private holding: L | undefined;
  /**
   * Holders that share the key (callers that passed `concurrency` > 1 or `shared`),
   * each with the most holders it accepts; undefined while there are none. Only
   * in-process backends grant such holds (`LockLines`).
   */
  private together: Map<L, number> | undefined = undefined;
  private togetherShared = false;
  /**
   * Holders sharing the key that wait for it elsewhere (transaction mode: inside the
   * server, behind another process), each a waiter of this process until it arrives
   * there or lets go. Undefined while there are none.
   */
  private togetherBehind: Set<L> | undefined = undefined;
  /**
   * The caller holding the key beside others that asks the backend for it now (a
   * backend asked on its turn that holds a key together, see
   * `LockBackend.holdsTogether`; one at a time, see `admits`), with whether it
   * learned that it waits there behind another process. Undefined while none asks.
   */
  private askingTogether: Map<LineCaller<L>, boolean> | undefined = undefined;

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

  /** The holders sharing the key (see `enter`), in the order they entered; empty when none. */
  get sharers(): IterableIterator<L> | readonly L[] {
    return this.together?.keys() ?? NONE;
  }

  /** Whether the holders sharing the key are `shared` ones (readers), not a `concurrency` group. */
  get sharedHold(): boolean {
    return this.togetherShared;
  }

  /**
   * Whether a caller accepting at most `limit` holders (itself included), `shared`
   * or not, may hold the key beside its holders now: nobody holds it; or shared
   * beside shared holders; or, neither shared, fewer holders than its limit and
   * than every holder's own limit (no mix lets in more than the smallest).
   */
  admits(limit: number, shared: boolean): boolean {
    // One caller asks the backend at a time, the next once it is answered: grants on
    // different sessions could otherwise come back out of arrival order (and their
    // tokens with them).
    return this.askingTogether === undefined && this.hasRoom(limit, shared);
  }

  /**
   * Whether there is room for such a caller once the caller asking the backend (if
   * any) is answered, counting it as a holder: what a try asks (it waits for that
   * answer rather than being refused while a place is free). None while that caller
   * waits in the backend behind another process: the next callers wait here, in
   * order, not there.
   */
  hasRoom(limit: number, shared: boolean): boolean {
    if (this.holding !== undefined || this.turnNow === Turn.Asking || this.turnNow === Turn.Releasing) return false;
    const together = this.together;
    const asking = this.askingTogether;
    if (together === undefined && asking === undefined) return true;
    if (asking !== undefined) for (const behind of asking.values()) if (behind) return false;
    if (shared || this.togetherShared) return shared && this.togetherShared;
    const size = (together?.size ?? 0) + (asking?.size ?? 0);
    if (size >= limit) return false;
    if (together !== undefined) for (const held of together.values()) if (size >= held) return false;
    if (asking !== undefined) for (const caller of asking.keys()) if (size >= caller.limit) return false;
    return true;
  }

  /** The caller asking the backend for the key beside others, while one does. */
  get asker(): LineCaller<L> | undefined {
    if (this.askingTogether === undefined) return undefined;
    const [caller] = this.askingTogether.keys();
    return caller;
  }

  /** Callers sharing the key that ask the backend for it now (see `askTogether`). */
  get askingBeside(): number {
    return this.askingTogether?.size ?? 0;
  }

  /** Callers of this process that wait in the backend behind another process (they count as waiters of this process). */
  get behindCount(): number {
    let count = this.waitingBehind ? 1 : 0;
    if (this.askingTogether !== undefined) for (const behind of this.askingTogether.values()) if (behind) count++;
    return count + (this.togetherBehind?.size ?? 0);
  }

  /** Arrival mode: callers in line the backend keeps waiting (the holder is never one). */
  get thereCount(): number {
    return this.there;
  }

  /** Whether `lock` holds the key beside others (it entered through `enter` or `enteredTogether`). */
  holdsBeside(lock: L): boolean {
    return this.together?.has(lock) ?? false;
  }

  /** Nobody holds, asks for, lets go of or waits for the key. */
  get idle(): boolean {
    return (
      this.count === 0 &&
      this.holding === undefined &&
      this.together === undefined &&
      this.askingTogether === undefined &&
      this.turnNow === Turn.Free
    );
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
    if (caller.waitingThere) this.there--;
    return true;
  }

  /** `waits-there` (arrival mode): the backend keeps `caller`, in line, waiting; it counts until it leaves. */
  waitsThere(caller: LineCaller<L>): void {
    caller.waitsThere();
    this.there++;
  }

  /** `ask`: the key's turn goes to a caller who asks the backend (a new run of local hand-offs starts). */
  ask(): void {
    this.turnNow = Turn.Asking;
    this.waitingBehind = false;
    this.inFlight = undefined;
    this.handOns = 0;
    this.holding = undefined;
  }

  /** `waits-behind`: the asking caller (`caller`, when it asks beside others) waits in the backend behind another process. */
  waitsBehind(caller?: LineCaller<L>): void {
    if (caller !== undefined && this.askingTogether?.has(caller)) this.askingTogether.set(caller, true);
    else this.waitingBehind = true;
  }

  /** `waits-behind` of `lock`, a holder beside others that now waits for the key elsewhere (see `togetherBehind`). */
  besideWaitsBehind(lock: L): void {
    (this.togetherBehind ??= new Set()).add(lock);
  }

  /** `hold` after `besideWaitsBehind`: `lock` got the key where it waited; it is no waiter any more. */
  besideArrived(lock: L): void {
    if (this.togetherBehind?.delete(lock) && this.togetherBehind.size === 0) this.togetherBehind = undefined;
  }

  /**
   * `ask-together`: a caller that `admits` allowed asks the backend for the key beside
   * the others sharing it (each such caller asks on its own, one after the other).
   */
  askTogether(caller: LineCaller<L>): void {
    this.turnNow = Turn.Held;
    (this.askingTogether ??= new Map()).set(caller, false);
    this.togetherShared = caller.shared;
  }

  /** `enter` after `ask-together`: the backend granted `caller` the key; its lock is `lock`. */
  enteredTogether(caller: LineCaller<L>, lock: L): void {
    this.endAsk(caller);
    (this.together ??= new Map()).set(lock, caller.limit);
    this.togetherShared = caller.shared;
  }

  /** `refused` after `ask-together`: the backend did not grant `caller` the key (busy, an error, it gave up). */
  askEnded(caller: LineCaller<L>): void {
    this.endAsk(caller);
    this.freeIfEmpty();
  }

  /**
   * `free`: nobody of this process holds, asks for or lets go of the key (the
   * next caller in line is one that shares it, and is admitted beside others).
   */
  free(): void {
    this.turnNow = Turn.Free;
    this.waitingBehind = false;
    this.inFlight = undefined;
    this.holding = undefined;
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

  /**
   * `enter`: a caller that `admits` allowed holds the key — alone (`limit` 1, not
   * `shared`: it is the holder) or beside the others sharing it.
   */
  enter(lock: L, limit: number, shared: boolean): void {
    this.turnNow = Turn.Held;
    if (limit === 1 && !shared) {
      this.holding = lock;
      return;
    }
    (this.together ??= new Map()).set(lock, limit);
    this.togetherShared = shared;
  }

  /** `exit`: a holder of this process lets go and nothing is asked of the backend; false when `lock` held nothing here. */
  exit(lock: L): boolean {
    if (this.holding === lock) {
      this.holding = undefined;
      // A holder that waited elsewhere (`LockLines.holderWaitsBehind`) and gave up is no waiter either.
      this.waitingBehind = false;
    } else if (!this.together?.delete(lock)) return false;
    else this.besideArrived(lock);
    if (this.together?.size === 0) this.together = undefined;
    this.freeIfEmpty();
    return true;
  }

  private endAsk(caller: LineCaller<L>): void {
    if (this.askingTogether?.delete(caller) && this.askingTogether.size === 0) this.askingTogether = undefined;
  }

  private freeIfEmpty(): void {
    if (this.holding === undefined && this.together === undefined && this.askingTogether === undefined && this.turnNow === Turn.Held)
      this.turnNow = Turn.Free;
  }

  /** `let-go`: the holder let go, and `release` is on its way to the backend. */
  letGo(release: Promise<unknown>): void {
    this.turnNow = Turn.Releasing;
    this.inFlight = release;
    this.holding = undefined;
  }
}
