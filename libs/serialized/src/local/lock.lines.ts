import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type { ProviderAcquireOptions } from '../acquire-options.interface';
import { LockBackendError, LockBusyError } from '../errors';
import { DeadlineQueue } from '../internal/deadline.queue';
import { DONE } from '../internal/release.after';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';
import { HolderDrain } from './holder.drain';
import { LineCaller, type CallerEnds } from './line.caller';
import type { LockBackend } from './lock-backend.interface';
import { LockLine, Turn } from './lock.line';
import { PendingBudget } from './pending.budget';

/** What `LockLines.inspectHere` sees of one key in this process. */
export interface KeyHere<L> {
  /** The caller of this process holding the key, if one does. */
  readonly holder: L | undefined;
  /** Callers of this process waiting for the key: in line, or asking the backend (the holder not counted). */
  readonly waiting: number;
  /** The other holders of this process, when several hold the key together (`concurrency`, `shared`). */
  readonly others?: readonly L[];
  /** Whether the holders hold the key `shared`. */
  readonly shared?: boolean;
}

const NOBODY: KeyHere<never> = Object.freeze({ holder: undefined, waiting: 0 });

/** The settings of one provider's lines; each falls back to the module's default. */
export interface LockLinesSettings {
  readonly waitTimeoutMs?: number;
  readonly maxPending?: number;
  readonly maxPendingTotal?: number;
  readonly shutdownGraceMs?: number;
  /** Local hand-offs in a row before the key goes back to the backend (none: the backend hands nothing on). */
  readonly maxLocalHandOffs?: number;
  /** The provider's timer queue (one per provider instance). */
  readonly deadlines?: DeadlineQueue;
  /** The provider's class name, in the error of a call asking for what its backend cannot hold. */
  readonly name?: string;
  /** Keep the held locks themselves (for `holders()`), not only their number. */
  readonly trackHeld?: boolean;
}

/**
 * A line with nobody in it and nothing in flight (frozen): the entry of `IDLE`.
 * A key held in-process (a backend with `takeNow`) with nobody waiting has no line
 * either: its entry is the holder's lock itself, so taking a free key allocates
 * nothing and `inspectHere` still finds the holder; the first caller to wait gives
 * the key a line of its own.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- one frozen line stands for every lock type
const HELD: LockLine<any> = Object.freeze(new LockLine<unknown>('', Turn.Held)) as LockLine<unknown>;

/** The key of the line that keeps `lines` from ever being empty (no string is it). */
const IDLE: unique symbol = Symbol('idle');

function noop(): void {}

/** A lock granted to a caller that left: released a microtask later, outside the backend event that granted it. */
function passOn(lock: { release(): Promise<void> }): void {
  queueMicrotask(() => lock.release().catch(noop));
}

/** Whether a caller holds the key beside others (`concurrency` > 1 or `shared`), not alone. */
function isShaped(caller: Pick<LineCaller<unknown>, 'limit' | 'shared'>): boolean {
  return caller.limit !== 1 || caller.shared;
}

/**
 * The one local layer under every driver: for each key, this process's line of
 * callers (arrival order), admission (`maxPending`, the holder not counted;
 * `maxPendingTotal` across keys), waits with their timeouts and aborts, whose turn
 * it is to ask the backend (one caller per key and process at a time), the holders,
 * releases in flight (a try waits for its own process's), local hand-off and its
 * bound, and the shutdown drain — and the only writer of all of it. The backend
 * adapter (`LockBackend`) only says how to take, hand on and give back a key.
 *
 * An idle key leaves nothing behind. A caller given the key in the same tick it
 * gave up passes it on without running.
 */
export class LockLines<L extends { readonly key: string; release(): Promise<void> }, K = never> implements CallerEnds {
  /**
   * Keys held, asked for or waited for — a line, or (held in-process, nobody
   * waiting) the holder's lock — and one entry that is no key (`IDLE`): V8
   * shrinks a Map emptied by `delete` — a runtime call and a new table — so without
   * it every uncontended take-and-release of a lone key would pay that twice over
   * (bench row `1.memory`).
   */
  private readonly lines = new Map<string | typeof IDLE, LockLine<L> | L>([[IDLE, HELD]]);
  /** Lines of their own (not `HELD`, not a lock); none: releasing in-process is one Map delete. */
  private lined = 0;
  private readonly holderDrain: HolderDrain<L>;
  private readonly budget: PendingBudget;
  private readonly deadlines: DeadlineQueue;
  private readonly waitTimeoutMs: number;
  private readonly maxPending: number;
  private readonly shutdownGraceMs: number;
  private readonly maxLocalHandOffs: number;
  private readonly name: string;
  /** The backend has nothing to ask (in-memory): grants and releases are synchronous. */
  private readonly inProcess: boolean;
  /** Every caller asks the backend on arrival (`LockBackend.asksOn`): its line only keeps the waiters' order here. */
  private readonly arrival: boolean;
  /** One key may have several holders at once (`concurrency` > 1, `shared`): in-process, or the backend says it holds them. */
  private readonly together: boolean;
  /** Arrival mode: callers whose budget starts at the next turn of the event loop. */
  private readonly unstamped: LineCaller<L>[] = [];
  // The stamping turn is scheduled in the provider's scope, not in the request that happened to come first.
  private stampScope: AsyncResource | undefined;
  private readonly onStamp = (): void => this.stamp();

  constructor(
    private readonly backend: LockBackend<L, K>,
    settings: LockLinesSettings = {},
  ) {
    this.inProcess = backend.takeNow !== undefined;
    this.arrival = backend.asksOn === 'arrival';
    if (this.arrival && backend.askOnArrival === undefined)
      throw new Error('nestjs-serialized: a backend that asks on arrival answers its waiting callers through askOnArrival');
    this.together = this.inProcess || backend.holdsTogether === true;
    this.deadlines = settings.deadlines ?? new DeadlineQueue();
    this.waitTimeoutMs = settings.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.maxPending = settings.maxPending ?? SERIALIZED_DEFAULTS.maxPending;
    this.shutdownGraceMs = settings.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs;
    this.maxLocalHandOffs = settings.maxLocalHandOffs ?? 0;
    this.name = settings.name ?? 'this provider';
    this.budget = new PendingBudget(settings.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal);
    // Counted, not kept, unless the provider visits them: each lock is released once.
    this.holderDrain = new HolderDrain<L>(false, settings.trackHeld ?? false);
  }

  /** Keys held, asked for or waited for in this process (0 when idle: nothing is retained). */
  get activeKeys(): number {
    return this.lines.size - 1;
  }

  /**
   * Whether one key may have several holders at once (`concurrency` > 1, `shared`):
   * in-process backends, and backends asked on their turn that say they hold a key
   * together (`LockBackend.holdsTogether`).
   */
  get holdsTogether(): boolean {
    return this.together;
  }

  /** Whether a deadline timer is armed (none when nobody waits). */
  get timerArmed(): boolean {
    return this.deadlines.armed;
  }

  /** Locks held through this provider right now. */
  get heldCount(): number {
    return this.holderDrain.size;
  }

  /** Whether shutdown began. */
  get closing(): boolean {
    return this.holderDrain.closing;
  }

  /** The held locks (with `trackHeld`). */
  holders(): IterableIterator<L> {
    return this.holderDrain.values();
  }

  /** Callers of this process waiting for `key` (the holder and the caller asking the backend not counted). */
  waiting(key: string): number {
    const line = this.lines.get(key);
    return line instanceof LockLine ? line.waiting : 0;
  }

  /**
   * What this process does with `key` right now, read without changing anything:
   * its holder (if a caller of this process holds it) and how many of its callers
   * wait for it — those in line, and the one asking the backend (trying, or
   * waiting there behind another process). O(1).
   */
  inspectHere(key: string): KeyHere<L> {
    const entry = this.lines.get(key);
    if (entry === undefined) return NOBODY;
    if (!(entry instanceof LockLine)) return { holder: entry, waiting: 0 };
    const waiting = entry.waiting + (entry.turn === Turn.Asking ? 1 : 0) + entry.askingBeside;
    if (entry.holder !== undefined) return { holder: entry.holder, waiting };
    const [holder, ...others] = entry.sharers;
    return holder === undefined ? { holder, waiting } : { holder, waiting, others, shared: entry.sharedHold };
  }

  /**
   * The synchronous fast path (in-process backends only): `key`, held, when it is
   * free and nothing stands in the way; `undefined` otherwise, and the caller goes
   * through {@link acquire}. Never throws. `key` and `options` must be valid.
   */
  acquireNow(key: string, signal: AbortSignal | undefined, leaseMs: number | undefined): L | undefined {
    // A held key is the common miss: answered first.
    if (this.lines.has(key) || !this.inProcess || this.holderDrain.closing || signal?.aborted) return undefined;
    return this.takenNow(this.backend.takeNow!(key, leaseMs));
  }

  /**
   * Waits for `key` in arrival order and resolves with it held. Not an `async`
   * function: a free in-process key costs one settled promise, and a waiter's
   * promise is its own. `key` and `options` must be valid (the provider or
   * `LockService` validated them).
   */
  acquire(key: string, options: ProviderAcquireOptions): Promise<L> {
    if (this.holderDrain.closing) return Promise.reject(LockBackendError.shuttingDown(key));
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const limit = options.concurrency ?? 1;
    const shared = options.shared === true;
    if (limit !== 1 || shared) return this.acquireShaped(key, options, limit, shared);
    if (this.arrival) return this.arrive(key, options);
    const line = this.lines.get(key);
    const waitTimeoutMs = options.waitTimeoutMs ?? this.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.maxPending;
    if (line === undefined) {
      if (this.inProcess) return Promise.resolve(this.takenNow(this.backend.takeNow!(key, options.leaseMs)));
      const fresh = this.open(key, Turn.Asking);
      const caller = this.waiter(key, options, waitTimeoutMs, maxPending);
      this.ask(fresh, caller);
      return caller.promise as Promise<L>;
    }
    return this.wait(line, key, options, waitTimeoutMs, maxPending, 1, false);
  }

  /**
   * A caller for `key` that holds it beside others (`concurrency` > 1, `shared`):
   * backends that hold a key together only (`holdsTogether`). When nobody waits and
   * the holders (and the callers asking beside them) admit it (`LockLine.admits`),
   * it enters at once in-process, or asks the backend on its own (`askTogether`);
   * otherwise it waits in line. A line is kept while it holds, so its release lets
   * the next callers in (`admit`).
   */
  private acquireShaped(key: string, options: ProviderAcquireOptions, limit: number, shared: boolean): Promise<L> {
    if (!this.together) return Promise.reject(this.cannotShare(key, options));
    // Asked on arrival: the backend admits it beside the holders, in its own order (Redis).
    if (this.arrival) return this.arrive(key, options, limit, shared);
    const entry = this.lines.get(key);
    const line = entry === undefined ? this.open(key, Turn.Free) : entry instanceof LockLine ? entry : this.open(key, Turn.Held, entry);
    const waitTimeoutMs = options.waitTimeoutMs ?? this.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.maxPending;
    if (line.waiting === 0 && line.admits(limit, shared)) {
      if (this.inProcess) return Promise.resolve(this.enterNow(line, options.leaseMs, limit, shared));
      const caller = this.waiter(key, options, waitTimeoutMs, maxPending, limit, shared);
      this.askTogether(line, caller);
      return caller.promise as Promise<L>;
    }
    return this.wait(line, key, options, waitTimeoutMs, maxPending, limit, shared);
  }

  /** A caller takes its place in `key`'s line (`line`: its entry — a line, or the lock holding it in-process) and waits for its turn. */
  private wait(
    line: LockLine<L> | L,
    key: string,
    options: ProviderAcquireOptions,
    waitTimeoutMs: number,
    maxPending: number,
    limit: number,
    shared: boolean,
  ): Promise<L> {
    const signal = options.signal;
    if (waitTimeoutMs <= 0) return Promise.reject(this.backend.timeoutError(key, waitTimeoutMs));
    // The holder is not a waiter; a caller asking the backend that waits there behind another process is one.
    const lined = line instanceof LockLine;
    if ((lined ? line.waiting + line.behindCount : 0) >= maxPending)
      return Promise.reject(new LockBusyError(key, 'max-pending', { maxPending }));
    if (!this.budget.take()) return Promise.reject(this.budget.busyError(key));
    const own = lined ? line : this.open(key, Turn.Held, line);
    const caller = this.waiter(key, options, waitTimeoutMs, maxPending, limit, shared);
    own.join(caller);
    this.deadlines.addInLine(caller, waitTimeoutMs);
    if (!signal) return caller.promise as Promise<L>;
    signal.addEventListener('abort', caller, { once: true });
    return (caller.promise as Promise<L>).then((lock) => {
      // Handed the key in the same tick the caller gave up: pass it on, never run.
      if (signal.aborted) {
        lock.release().catch(noop);
        throw signal.reason;
      }
      return lock;
    });
  }

  /**
   * Takes `key` only if nobody of this process holds, asks for or waits for it and
   * the backend grants it at once (it never jumps a queue); `null` otherwise. A
   * release of this process's own on its way to the backend is waited for first:
   * a caller that saw a section end finds the key free.
   */
  async tryAcquire(key: string, options: ProviderAcquireOptions): Promise<L | null> {
    const limit = options.concurrency ?? 1;
    if (limit !== 1 || options.shared === true) return this.tryShaped(key, options, limit, options.shared === true);
    for (;;) {
      if (this.holderDrain.closing) throw LockBackendError.shuttingDown(key);
      if (options.signal?.aborted) throw options.signal.reason;
      const line = this.lines.get(key);
      if (line === undefined) break;
      // Held in-process, nobody waiting, nothing in flight.
      if (!(line instanceof LockLine)) return null;
      const releasing = line.releasing;
      if (releasing === undefined || line.waiting > 0) return null;
      await releasing.then(noop, noop);
    }
    if (this.inProcess) return this.takenNow(this.backend.takeNow!(key, options.leaseMs));
    if (this.arrival) return this.tryOnArrival(key, options);
    const fresh = this.open(key, Turn.Asking);
    const caller = this.tryCaller(key, options);
    this.ask(fresh, caller);
    return caller.promise;
  }

  /**
   * `take-set`: a key set (distinct keys, canonical order) at once, when the backend
   * can (`LockBackend.takeSet`) and nobody of this process holds, asks for or waits
   * for any of its keys. Each key's line is opened with the set's try caller asking,
   * so a caller arriving meanwhile waits behind it, as behind any caller asking; a
   * grant makes each the holder of its key, and a busy key (`null`) or an error ends
   * every ask as a refused try does (the next caller of each key asks). A backend
   * asked on arrival orders every process's callers itself: no line is opened
   * before its answer. `undefined` when not asked: the caller takes the keys one by one.
   */
  takeSet(keys: readonly string[], options: ProviderAcquireOptions): Promise<L[] | null> | undefined {
    const backend = this.backend;
    if (backend.takeSet === undefined || this.inProcess || this.holderDrain.closing || options.signal?.aborted) return undefined;
    for (const key of keys) if (this.lines.has(key)) return undefined;
    if (this.arrival) return this.takeSetOnArrival(keys, options);
    const lines = keys.map((key) => this.open(key, Turn.Asking));
    const callers = keys.map((key) => this.tryCaller(key, options));
    let asked: Promise<L[] | null>;
    try {
      asked = backend.takeSet(callers);
    } catch (error) {
      asked = Promise.reject(error);
    }
    return asked.then(
      (locks) => {
        for (let i = 0; i < lines.length; i++) {
          if (locks === null) this.refused(lines[i], callers[i], null);
          else this.granted(lines[i], callers[i], locks[i]);
        }
        return locks;
      },
      (error: unknown) => {
        // Nobody reads the callers' own answers: the set's caller gets the error.
        for (let i = 0; i < lines.length; i++) this.refused(lines[i], callers[i], null);
        throw error;
      },
    );
  }

  /**
   * `waits-behind`: the caller asking the backend for its key found it held by
   * another process and is about to wait there, so it now counts as a waiter of this
   * process: callers of the line beyond their bound, counting it, are refused (the
   * oldest keep their places). Returns the error for the caller itself when it may
   * not wait (`maxPending: 0`). `caller`: the caller itself, when it asks beside
   * others.
   */
  waitsBehind(key: string, maxPending: number, caller?: unknown): LockBusyError | undefined {
    const line = this.lines.get(key);
    if (line instanceof LockLine && line !== HELD) {
      line.waitsBehind(caller as LineCaller<L> | undefined);
      this.refuseBeyondBound(line);
    }
    return maxPending >= 1 ? undefined : new LockBusyError(key, 'max-pending', { maxPending });
  }

  /** Callers of `line` beyond their own bound, counting those of this process that wait elsewhere first, are refused (the oldest keep their places). */
  private refuseBeyondBound(line: LockLine<L>): void {
    let place = line.behindCount;
    for (let waiter = line.head; waiter;) {
      const next = waiter.next;
      if (place < waiter.maxPending) place++;
      else if (this.leave(waiter)) waiter.reject(new LockBusyError(line.key, 'max-pending', { maxPending: waiter.maxPending }));
      waiter = next;
    }
  }

  /**
   * `waits-behind` of a holder that waits elsewhere (in-process backends whose holder
   * then waits for the key in a backend of its own: transaction mode holds its place
   * here, then waits inside the server while another process holds the key there).
   * It counts as a waiter of this process from now until `holderArrived` or its
   * release, as a caller asking a backend that learned it waits there; callers of
   * the line beyond their bound are refused. Returns the error for the holder itself
   * when it may not wait: `maxPending: 0`, or — a holder beside others (`shared`,
   * `concurrency`), several of which may wait there at once — when `maxPending` of
   * this process wait already.
   */
  holderWaitsBehind(lock: L, maxPending: number): LockBusyError | undefined {
    const entry = this.lines.get(lock.key);
    // Held with nobody waiting: its entry is the lock itself, and the count needs a line.
    if (entry === lock) this.open(lock.key, Turn.Held, lock);
    else if (!(entry instanceof LockLine)) return undefined;
    else if (entry.holdsBeside(lock)) {
      if (entry.behindCount >= maxPending) return new LockBusyError(lock.key, 'max-pending', { maxPending });
      entry.besideWaitsBehind(lock);
      this.refuseBeyondBound(entry);
      return undefined;
    } else if (entry.holder !== lock) return undefined;
    return this.waitsBehind(lock.key, maxPending);
  }

  /** `hold` after `holderWaitsBehind`: the holder got the key where it waited; it is no waiter any more. */
  holderArrived(lock: L): void {
    const line = this.lines.get(lock.key);
    if (!(line instanceof LockLine)) return;
    if (line.holder === lock) line.hold(lock);
    else line.besideArrived(lock);
  }

  /**
   * `release`: a holder lets go (its lock calls this once). The key goes to the next
   * caller of this process — in-process when the backend keeps it and the bound
   * allows — or back to the backend, and the next caller asks. Resolves when the
   * backend has it; rejects when the backend could not be told (the key is freed here all the same).
   */
  released(lock: L): Promise<void> {
    if (this.arrival) return this.letGoOnArrival(lock);
    const key = lock.key;
    // Nobody waits for any key and nothing is asked of a backend (the uncontended in-process case): one Map delete.
    if (this.lined === 0 && this.inProcess) {
      this.lines.delete(key);
      this.holderDrain.delete(lock);
      return DONE;
    }
    const line = this.lines.get(key);
    if (!(line instanceof LockLine)) {
      // Held in-process with nobody waiting (or already forgotten): nothing to hand on.
      if (line === lock) this.lines.delete(key);
      this.holderDrain.delete(lock);
      return DONE;
    }
    if (this.inProcess) {
      line.exit(lock);
      // The next holders are counted before this one leaves: a drain never sees a handed-on key as idle.
      this.admit(line);
      this.holderDrain.delete(lock);
      return DONE;
    }
    if (line.holdsBeside(lock)) return this.releaseBeside(line, lock);
    // Only a caller that holds the key alone takes it in-process from its holder.
    const head = line.head;
    const waits = head !== undefined && !isShaped(head) && !this.holderDrain.closing;
    let outcome: K | undefined | Promise<K | undefined>;
    try {
      outcome = this.backend.release(lock, waits && line.passes < this.maxLocalHandOffs);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    if (!(outcome instanceof Promise)) {
      // The next holder (if any) is counted before this one leaves: a drain never sees a handed-on key as idle.
      if (outcome === undefined) this.nextTurn(line);
      else this.handOn(line, outcome);
      this.holderDrain.delete(lock);
      return DONE;
    }
    line.letGo(outcome);
    return outcome.then(
      (handed) => {
        if (handed === undefined) this.nextTurn(line);
        else this.handOn(line, handed);
        this.holderDrain.delete(lock);
      },
      (error: unknown) => {
        this.nextTurn(line);
        this.holderDrain.delete(lock);
        throw error;
      },
    );
  }

  /**
   * `let-go` of a holder that held the key beside others, on a backend asked on its
   * turn: its place goes back to the backend (never handed on here), and once the
   * backend has it the next callers of this process are admitted (`admit`). It
   * counts as a holder until then, so nobody here asks for a place still taken.
   */
  private releaseBeside(line: LockLine<L>, lock: L): Promise<void> {
    let outcome: K | undefined | Promise<K | undefined>;
    try {
      outcome = this.backend.release(lock, false);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    const done = (): void => {
      line.exit(lock);
      this.admit(line);
      this.holderDrain.delete(lock);
    };
    if (!(outcome instanceof Promise)) {
      done();
      return DONE;
    }
    return outcome.then(done, (error: unknown) => {
      done();
      throw error;
    });
  }

  /** Shutdown: newcomers and waiters get `LockBackendError`, asks in flight end, holders get up to the grace period. */
  async stopTaking(): Promise<boolean> {
    this.holderDrain.close();
    for (const line of this.lines.values()) {
      if (!(line instanceof LockLine)) continue;
      for (let caller = line.head; caller; caller = line.head) {
        this.leave(caller);
        if (this.arrival) this.backend.withdraw?.(caller);
        caller.reject(LockBackendError.shuttingDown(line.key));
      }
      if (this.arrival) this.closeIfIdle(line);
    }
    this.backend.stopAsking?.((key) => LockBackendError.shuttingDown(key));
    return this.holderDrain.drain(this.shutdownGraceMs);
  }

  /** Clears the timers (after shutdown). */
  clearTimers(): void {
    this.deadlines.clear();
  }

  /** CallerEnds: a waiting caller's budget ran out. */
  timedOut(caller: LineCaller<unknown>): void {
    if (!this.arrival) {
      if (this.leave(caller as LineCaller<L>)) caller.reject(this.backend.timeoutError(caller.key, caller.waitTimeoutMs));
      return this.admitBehind(caller.key);
    }
    // Its ask may be unanswered because the backend is gone: the backend says whether to look again.
    const again = caller.settled ? undefined : this.backend.overdue?.(caller as LineCaller<L>);
    if (again !== undefined) return this.deadlines.addInLine(caller, again);
    this.withdrawn(caller as LineCaller<L>, this.backend.timeoutError(caller.key, caller.waitTimeoutMs));
  }

  /** CallerEnds: a waiting caller's signal aborted. */
  aborted(caller: LineCaller<unknown>): void {
    if (this.arrival) return this.withdrawn(caller as LineCaller<L>, caller.signal!.reason);
    if (this.leave(caller as LineCaller<L>)) caller.reject(caller.signal!.reason);
    this.admitBehind(caller.key);
  }

  /** A waiter left `key`'s line: the callers behind it may be admitted now (a writer that gave up let readers in). */
  private admitBehind(key: string): void {
    if (!this.together) return;
    const line = this.lines.get(key);
    if (line instanceof LockLine && line !== HELD && line.turn !== Turn.Asking && line.turn !== Turn.Releasing) this.admit(line);
  }

  // ---- callers that ask on arrival (`LockBackend.asksOn: 'arrival'`) ---------------

  /**
   * Arrival mode: admission, then the caller asks the backend at once; its line
   * keeps it (in arrival order) until it holds the key or gives up. The caller
   * becoming the holder is not a waiter: while this process holds the key every
   * caller of it waits; while it does not, one of those asking may be about to take
   * it, so one more is let through (the backend refuses it, once it learns it waits
   * behind more than `maxPending` of this process's callers).
   */
  private arrive(key: string, options: ProviderAcquireOptions, limit = 1, shared = false): Promise<L> {
    const waitTimeoutMs = options.waitTimeoutMs ?? this.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.maxPending;
    const line = this.lines.get(key) as LockLine<L> | undefined;
    const waiting = line?.waiting ?? 0;
    const busy = waiting > 0 || line?.holder !== undefined;
    if (waitTimeoutMs <= 0) return this.takeIfFree(key, options, () => this.backend.timeoutError(key, waitTimeoutMs));
    if (maxPending <= 0) {
      // None may wait: only a free key will do.
      const refused = new LockBusyError(key, 'max-pending', { maxPending });
      return busy ? Promise.reject(refused) : this.takeIfFree(key, options, () => refused);
    }
    if (waiting >= (line?.holder !== undefined ? maxPending : maxPending + 1))
      return Promise.reject(new LockBusyError(key, 'max-pending', { maxPending }));
    if (!this.budget.take()) {
      // Every place is taken (`maxPendingTotal`): only a free key will do, as its caller would be no waiter.
      const refused = this.budget.busyError(key);
      return busy ? Promise.reject(refused) : this.takeIfFree(key, options, () => refused);
    }
    const own = line ?? this.open(key, Turn.Free);
    const caller = this.waiter(key, options, waitTimeoutMs, maxPending, limit, shared);
    own.join(caller);
    // Budgets run from the call, but not from within the caller's own synchronous burst (a loop
    // starting thousands of acquisitions cannot be answered before it ends; docs/providers/redis.md,
    // "A burst is overload, not an outage"): they start at the first turn of the event loop after it,
    // one stamp per turn.
    if (this.unstamped.push(caller) === 1) {
      this.stampScope ??= new AsyncResource('nestjs-serialized.wait-budgets');
      this.stampScope.runInAsyncScope(() => setImmediate(this.onStamp));
    }
    options.signal?.addEventListener('abort', caller, { once: true });
    try {
      this.backend.askOnArrival!(caller);
    } catch (error) {
      // A backend that throws instead is answered as any refusal, never thrown at the caller.
      this.failed(caller as LineCaller<unknown>, error);
    }
    return caller.promise as Promise<L>;
  }

  /** A caller that waits for `key` (mode `wait`), its budget counted from now. */
  private waiter(
    key: string,
    options: ProviderAcquireOptions,
    waitTimeoutMs: number,
    maxPending: number,
    limit = 1,
    shared = false,
  ): LineCaller<L> {
    return new LineCaller<L>(
      this,
      key,
      'wait',
      waitTimeoutMs,
      performance.now(),
      options.signal,
      maxPending,
      options.leaseMs,
      options.handoff,
      limit,
      shared,
    );
  }

  /** `stamp`: the budgets of the callers that arrived in the last turn of the event loop start now. */
  private stamp(): void {
    const now = performance.now();
    for (const caller of this.unstamped) {
      if (caller.settled) continue;
      caller.stamp(now);
      this.deadlines.addInLine(caller, caller.waitTimeoutMs);
    }
    this.unstamped.length = 0;
  }

  /** A caller that may not wait: the key if it is free now, else `error()`. */
  private takeIfFree(key: string, options: ProviderAcquireOptions, error: () => Error): Promise<L> {
    return this.tryAcquire(key, options).then((lock) => lock ?? Promise.reject(error()));
  }

  /** Arrival mode, a try: the backend grants the key at once or says it is busy; the line records a holder. */
  private async tryOnArrival(key: string, options: ProviderAcquireOptions, limit = 1, shared = false): Promise<L | null> {
    const lock = await this.backend.take(this.tryCaller(key, options, limit, shared));
    if (lock === null) return null;
    const line = (this.lines.get(key) as LockLine<L> | undefined) ?? this.open(key, Turn.Free);
    line.enter(lock, limit, shared);
    this.holderDrain.add(lock);
    return lock;
  }

  /**
   * Arrival mode, a key set at once: the backend grants every key or none (its own
   * queues order the callers of every process, so nobody here waits behind the set's
   * ask); each line records its holder, as after a try.
   */
  private async takeSetOnArrival(keys: readonly string[], options: ProviderAcquireOptions): Promise<L[] | null> {
    const locks = await this.backend.takeSet!(keys.map((key) => this.tryCaller(key, options)));
    if (locks === null) return null;
    for (const lock of locks) {
      const line = (this.lines.get(lock.key) as LockLine<L> | undefined) ?? this.open(lock.key, Turn.Free);
      line.hold(lock);
      this.holderDrain.add(lock);
    }
    return locks;
  }

  /**
   * `waits-there` (arrival mode): the backend keeps `caller` waiting — a place in its
   * queue, or a ride on this process's hold — so it counts as a waiter of this
   * process until it holds the key or leaves. Returns the error for the caller
   * itself when `maxPending` callers of this process wait there already (it is not
   * counted, and the backend gives up its place): the holder never counts, and a
   * caller counted once is not asked again (one the backend sends anew keeps its
   * count). With `waitsBehind` (backends asked on their turn), the one `maxPending`
   * count of every driver.
   */
  waitsThere(caller: LineCaller<L>): LockBusyError | undefined {
    const line = this.lines.get(caller.key);
    if (caller.waitingThere || caller.settled || !(line instanceof LockLine)) return undefined;
    if (line.thereCount >= caller.maxPending) return new LockBusyError(caller.key, 'max-pending', { maxPending: caller.maxPending });
    line.waitsThere(caller);
    return undefined;
  }

  /**
   * CallerEnds, `granted` (arrival mode): the backend answered the caller with the key.
   * Told while the backend carries out its own event, so a lock passed on here is
   * released after it (a microtask later), never from within it.
   */
  answered(answeredCaller: LineCaller<unknown>, answer: unknown): void {
    const caller = answeredCaller as LineCaller<L>;
    const lock = answer as L;
    const line = this.lines.get(caller.key) as LockLine<L>;
    // Held until its release is answered (a drain waits for it), whoever runs.
    this.holderDrain.add(lock);
    // It left meanwhile (its budget ran out, it aborted, shutdown): the key goes on, never run.
    if (!this.leave(caller)) return passOn(lock);
    // Handed the key in the same tick the caller gave up: pass it on, never run.
    if (caller.signal?.aborted) {
      caller.reject(caller.signal.reason);
      passOn(lock);
      return this.closeIfIdle(line);
    }
    line.enter(lock, caller.limit, caller.shared);
    caller.resolve(lock);
  }

  /** CallerEnds, `failed` (arrival mode): the backend refused the caller (busy, its error); nothing if it left already. */
  failed(failedCaller: LineCaller<unknown>, error: unknown): void {
    const caller = failedCaller as LineCaller<L>;
    const line = this.lines.get(caller.key) as LockLine<L>;
    if (!this.leave(caller)) return;
    caller.reject(error);
    this.closeIfIdle(line);
  }

  /** `withdraw` (arrival mode): the caller gives up with `error`; its place at the backend is given up. */
  private withdrawn(caller: LineCaller<L>, error: unknown): void {
    const line = this.lines.get(caller.key) as LockLine<L>;
    if (!this.leave(caller)) return;
    this.backend.withdraw?.(caller);
    caller.reject(error);
    this.closeIfIdle(line);
  }

  /** `let-go` (arrival mode): the holder lets go; the backend hands the key on itself. */
  private letGoOnArrival(lock: L): Promise<void> {
    const line = this.lines.get(lock.key);
    let outcome: K | undefined | Promise<K | undefined>;
    try {
      outcome = this.backend.release(lock, false);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    const release: Promise<unknown> = outcome instanceof Promise ? outcome : DONE;
    if (line instanceof LockLine && line.holder === lock) line.letGo(release);
    // A holder beside others (the backend admits the next ones itself).
    else if (line instanceof LockLine) line.exit(lock);
    return release.then(
      () => this.releasedOnArrival(lock, release),
      (error: unknown) => {
        this.releasedOnArrival(lock, release);
        throw error;
      },
    );
  }

  private releasedOnArrival(lock: L, release: Promise<unknown>): void {
    this.holderDrain.delete(lock);
    const line = this.lines.get(lock.key);
    if (!(line instanceof LockLine)) return;
    line.gone(release);
    this.closeIfIdle(line);
  }

  /** Arrival mode: a line with nobody waiting, holding (alone or beside others) or letting go leaves nothing behind. */
  private closeIfIdle(line: LockLine<L> | undefined): void {
    if (line && line.waiting === 0 && line.holder === undefined && line.turn !== Turn.Releasing && line.turn !== Turn.Held)
      this.close(line);
  }

  /** A line of `key`'s own; `holder`: the lock that holds the key in-process (the entry the line replaces). */
  private open(key: string, turn: Turn, holder?: L): LockLine<L> {
    const line = new LockLine<L>(key, turn, holder);
    this.lines.set(key, line);
    this.lined++;
    return line;
  }

  private close(line: LockLine<L>): void {
    if (this.lines.get(line.key) !== line) return;
    this.lines.delete(line.key);
    if (line !== HELD) this.lined--;
  }

  private holding(lock: L): L {
    this.holderDrain.add(lock);
    return lock;
  }

  /** A free key taken in-process (nobody in line): its entry is the lock itself. */
  private takenNow(lock: L): L {
    this.lines.set(lock.key, lock);
    this.holderDrain.add(lock);
    return lock;
  }

  /** The caller of a try (`tryAcquire`, `tryOnArrival`): it takes no place in line, so no `maxPending` bounds it. */
  private tryCaller(key: string, options: ProviderAcquireOptions, limit = 1, shared = false): LineCaller<L> {
    return new LineCaller<L>(
      this,
      key,
      'try',
      options.waitTimeoutMs ?? this.waitTimeoutMs,
      performance.now(),
      options.signal,
      Infinity,
      options.leaseMs,
      options.handoff,
      limit,
      shared,
    );
  }

  /** A waiting caller leaves its place (its turn came, or it gave up); false when it had none. */
  private leave(caller: LineCaller<L>): boolean {
    const line = this.lines.get(caller.key);
    if (!(line instanceof LockLine) || !line.leave(caller)) return false;
    this.deadlines.cancelInLine(caller);
    caller.signal?.removeEventListener('abort', caller);
    this.budget.give();
    return true;
  }

  /**
   * The backend's answer to `caller`'s ask: a lock, `null`, or a promise of either. A
   * backend that throws instead is answered as any refusal, never thrown at the caller.
   */
  private taken(caller: LineCaller<L>): L | Promise<L | null> {
    try {
      return this.backend.take(caller);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `ask`: the caller's turn came: the backend is asked for the key on its behalf. */
  private ask(line: LockLine<L>, caller: LineCaller<L>): void {
    line.ask();
    const asked = this.taken(caller);
    if (!(asked instanceof Promise)) return this.granted(line, caller, asked);
    asked.then(
      (lock) => (lock === null ? this.refused(line, caller, null) : this.granted(line, caller, lock)),
      (error: unknown) => this.refused(line, caller, error),
    );
  }

  private granted(line: LockLine<L>, caller: LineCaller<L>, lock: L): void {
    line.hold(lock);
    this.holding(lock);
    caller.resolve(lock);
  }

  /** The backend did not grant the key (a try found it busy: `null`; or an error): the next caller's turn, once the backend has wound down. */
  private refused(line: LockLine<L>, caller: LineCaller<L>, error: unknown): void {
    if (error === null) caller.resolve(null);
    else caller.reject(error);
    const winding = this.backend.windingDown?.(line.key);
    if (winding === undefined) return this.nextTurn(line);
    line.letGo(winding);
    winding.then(
      () => this.nextTurn(line),
      () => this.nextTurn(line),
    );
  }

  /**
   * The key's turn passes to the next caller of this process, who asks the backend;
   * or, a caller that shares the key, the callers at the head are admitted beside
   * each other; or the key goes idle here.
   */
  private nextTurn(line: LockLine<L>): void {
    const caller = line.head;
    if (caller === undefined) return this.close(line);
    if (isShaped(caller)) {
      line.free();
      return this.admit(line);
    }
    this.leave(caller);
    this.ask(line, caller);
  }

  /** A try of a caller sharing the key (see {@link acquireShaped}): it enters only if nobody waits and the holders admit it. */
  private async tryShaped(key: string, options: ProviderAcquireOptions, limit: number, shared: boolean): Promise<L | null> {
    let entry: LockLine<L> | L | undefined;
    for (;;) {
      if (this.holderDrain.closing) throw LockBackendError.shuttingDown(key);
      if (options.signal?.aborted) throw options.signal.reason;
      if (!this.together) throw this.cannotShare(key, options);
      // Asked on arrival: the backend answers in its own order (Redis: nobody queued there, and room beside the holders).
      if (this.arrival) return this.tryOnArrival(key, options, limit, shared);
      entry = this.lines.get(key);
      if (entry !== undefined && (!(entry instanceof LockLine) || entry.waiting > 0 || !entry.hasRoom(limit, shared))) return null;
      // A place is free once the caller asking now is answered: the try waits for that answer, not refused meanwhile.
      const asker = entry?.asker;
      if (asker === undefined) break;
      await asker.promise.then(noop, noop);
    }
    const line = entry ?? this.open(key, Turn.Free);
    if (this.inProcess) return this.enterNow(line, options.leaseMs, limit, shared);
    const caller = this.tryCaller(key, options, limit, shared);
    this.askTogether(line, caller);
    return caller.promise;
  }

  /**
   * `ask-together` (a backend asked on its turn that holds a key together): the
   * caller asks the backend on its own, beside the holders (one caller of the key at
   * a time, see `LockLine.admits`); its grant lets the next callers in line ask
   * (`admit`), and so does a refusal.
   */
  private askTogether(line: LockLine<L>, caller: LineCaller<L>): void {
    line.askTogether(caller);
    const asked = this.taken(caller);
    if (!(asked instanceof Promise)) return this.grantedTogether(line, caller, asked);
    asked.then(
      (lock) => (lock === null ? this.refusedTogether(line, caller, null) : this.grantedTogether(line, caller, lock)),
      (error: unknown) => this.refusedTogether(line, caller, error),
    );
  }

  private grantedTogether(line: LockLine<L>, caller: LineCaller<L>, lock: L): void {
    line.enteredTogether(caller, lock);
    this.holding(lock);
    caller.resolve(lock);
    // A caller that waited behind another process held the next ones back: they may ask now.
    this.admit(line);
  }

  private refusedTogether(line: LockLine<L>, caller: LineCaller<L>, error: unknown): void {
    line.askEnded(caller);
    if (error === null) caller.resolve(null);
    else caller.reject(error);
    this.admit(line);
  }

  /** In-process: the key, taken now by a caller that `line` admits (`LockLine.enter`). */
  private enterNow(line: LockLine<L>, leaseMs: number | undefined, limit: number, shared: boolean): L {
    const lock = this.backend.takeNow!(line.key, leaseMs);
    line.enter(lock, limit, shared);
    return this.holding(lock);
  }

  /**
   * In-process: the callers at the head of `line` take the key while its holders
   * admit them, in arrival order — one writer, or every reader up to the next
   * writer, or a group up to its limit; an idle line leaves nothing behind.
   */
  private admit(line: LockLine<L>): void {
    for (let caller = line.head; caller !== undefined && line.admits(caller.limit, caller.shared); caller = line.head) {
      this.leave(caller);
      if (this.inProcess) caller.resolve(this.enterNow(line, caller.leaseMs, caller.limit, caller.shared));
      // Asked on its turn: a caller alone takes the key's turn (`ask`); one that shares it asks beside the others.
      else if (!isShaped(caller)) return this.ask(line, caller);
      else this.askTogether(line, caller);
    }
    if (line.idle) this.close(line);
  }

  /** The error of a call for several holders on a backend that holds a key for one only. */
  private cannotShare(key: string, options: ProviderAcquireOptions): Error {
    const asked = options.shared === true ? 'shared: true' : `concurrency: ${options.concurrency}`;
    return new RangeError(
      `${asked} is not available on ${this.name} (key "${key}"): its backend grants a key to one holder at a time; ` +
        'several holders of one key are granted by the in-memory, redis and postgres drivers, and in transaction mode (shared): ' +
        'see docs/semantics.md, "Several holders of one key"',
    );
  }

  /** `hand-on`: the backend kept the key for the next caller of this process. */
  private handOn(line: LockLine<L>, handed: K): void {
    const caller = line.head;
    if (caller === undefined || isShaped(caller)) {
      // Everyone who waited gave up meanwhile (or the next shares the key, which is never handed on): the key goes back to the backend.
      const back = this.backend.giveBack!(handed);
      line.letGo(back);
      back.then(
        () => this.nextTurn(line),
        () => this.nextTurn(line),
      );
      return;
    }
    this.leave(caller);
    const lock = this.backend.adopt!(handed, caller);
    if (lock === undefined) return this.ask(line, caller);
    line.handOn(lock);
    this.holding(lock);
    caller.resolve(lock);
  }
}
