import type { HeldKey, OwnedLock } from './lock.hold';
import { DONE } from './internal/release.after';
import { outerOf, type LockContext } from './lock.context';
import type { LockLostError } from './errors/lock-lost.error';
import type { InterceptedCall } from './metadata/intercepted.call';
import type { Lock } from './lock.interface';

/**
 * The locks of a key set (`lockService.run(['a', 'b'], (locks) => …)`,
 * `@Serialized(['params.fromId', 'params.toId'])`), in the order the keys were
 * given, duplicates collapsed. Each lock keeps its own `fencingToken`, lease and
 * `signal`; the set adds a view of all of them together.
 */
export interface LockSet extends ReadonlyArray<Lock> {
  /**
   * Aborts as soon as any lock of the set is lost (its reason: that lock's
   * `LockLostError`): `AbortSignal.any` over the locks' signals, made on first
   * read. Reading it also reads each lock's `lost`, so a section resuming after a
   * stall past a lease finds the signal aborted at once.
   */
  readonly signal: AbortSignal;
  /** The first lock of the set found lost, or `undefined` (reads each lock's `lost`). */
  readonly lost: LockLostError | undefined;
}

/** `locks` (not copied) as a frozen {@link LockSet}. @internal */
export function lockSetOf(locks: Lock[]): LockSet {
  let signal: AbortSignal | undefined;
  const lost = (): LockLostError | undefined => {
    let first: LockLostError | undefined;
    for (const lock of locks) first ??= lock.lost;
    return first;
  };
  Object.defineProperty(locks, 'lost', { get: lost, enumerable: false });
  Object.defineProperty(locks, 'signal', {
    get: () => {
      lost();
      return (signal ??= AbortSignal.any(locks.map((lock) => lock.signal)));
    },
    enumerable: false,
  });
  return Object.freeze(locks) as unknown as LockSet;
}

/**
 * A key set held by the current call: the locks it acquired (`owned`, in
 * canonical order) and those an enclosing section held already (joined). What
 * `LockService` runs a set's section under, and what the async context shows as
 * the innermost section (`@SerializedLock()` reads the set from it).
 * @internal
 */
export class HeldSet implements HeldKey {
  /** Always false: a set this call joined entirely still releases nothing (`owned` is then empty). */
  readonly reentrant = false;
  /** False once released. */
  active = true;
  /** The first lock of the set, in the order given: what `lockService.current()` names without a key. */
  readonly lock: Lock;

  constructor(
    /** The set's keys, in the order given (duplicates collapsed); `locks[i]` is the lock of `keys[i]`. */
    private readonly keys: readonly string[],
    readonly locks: LockSet,
    /** The locks this call acquired, in canonical order; released together. */
    private readonly owned: readonly OwnedLock[],
    /** Whether calls inside the section may join its keys (`reentrant`). */
    private readonly joinable: boolean,
  ) {
    this.lock = locks[0];
  }

  /** The lock of `key` in the set, if it is one of its keys. */
  lockOf(key: string): Lock | undefined {
    const at = this.keys.indexOf(key);
    return at < 0 ? undefined : this.locks[at];
  }

  /** Releases every key this call acquired (idempotent, never rejects). */
  release(): Promise<void> {
    if (!this.active) return DONE;
    this.active = false;
    let pending: Promise<void>[] | undefined;
    for (const held of this.owned) {
      const released = held.release();
      if (released !== DONE) (pending ??= []).push(released);
    }
    return pending ? Promise.all(pending).then(noop) : DONE;
  }

  /**
   * The async context of a section holding this set, begun in `store`: one link
   * per acquired key (so a nested call on any of them joins it, see `joinableLockOn`),
   * and on top the set itself as the innermost section.
   */
  contextIn(store: LockContext | undefined, interceptedCall: InterceptedCall | undefined): LockContext {
    let outer = outerOf(store);
    if (this.joinable) for (const held of this.owned) outer = { held, outer, innermost: this, interceptedCall: undefined };
    return { held: undefined, outer, innermost: this, interceptedCall };
  }
}

function noop(): void {}

/**
 * A set this call did not acquire itself (transaction mode: the transaction holds
 * it, and ends it): its section's view, with nothing to release.
 * @internal
 */
export function joinedSet(locks: LockSet): HeldSet {
  return new HeldSet(
    locks.map((lock) => lock.key),
    locks,
    [],
    false,
  );
}
