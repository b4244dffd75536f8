import type { LineCaller } from './line.caller';

/**
 * A backend adapter: what `LockLines` asks the backend for a key, and what the
 * replies mean. Every call returns its decoded answer; none calls back into the
 * layer (a backend *event* — a session that ended, a lease that lapsed — is told
 * to the lock it concerns). The layer decides everything local: the line, its
 * order, admission, waits, timeouts, aborts, releases in flight, the bound on
 * local hand-offs and shutdown.
 *
 * `K` is what the backend hands from a releasing holder to the next caller of this
 * process when the key stays taken in the backend (a local hand-off).
 */
export interface LockBackend<L, K = never> {
  /**
   * When a caller talks to the backend. `turn` (the default): one caller per key
   * and process at a time, when its turn in this process's line comes; the layer
   * hands the key on in-process. `arrival`: every caller asks at once on arrival,
   * so its place in the backend's own queue keeps the order of arrival across
   * processes (Redis); `askOnArrival` then asks for a `wait` caller, and the
   * backend hands the key on itself. Admission, budgets, timeouts, aborts,
   * shutdown and the holders stay the layer's either way.
   */
  readonly asksOn?: 'turn' | 'arrival';

  /**
   * A backend asked on its turn says it can hold one key for several callers at once
   * (`concurrency` > 1, `shared`: each such caller's `take` carries its `limit` and
   * `shared`). The layer then lets the compatible callers of this process ask, up
   * to the limit, in arrival order — one at a time, each once the one before it is
   * answered, so grants and their tokens follow that order — and gives each such
   * holder's place back to the backend at release (never handed on here). Without
   * it (and without `takeNow`), such calls are refused.
   */
  readonly holdsTogether?: boolean;

  /**
   * Only for a backend with nothing to ask (in-memory): `key` is free, and this is
   * its lock, made now. Its presence also says that releasing needs no backend.
   */
  takeNow?(key: string, leaseMs: number | undefined): L;

  /**
   * The caller's turn came (nobody of this process holds or asks for the key):
   * ask the backend. Resolves with the lock, with `null` when a try finds the key
   * busy, or rejects with the caller's error. A `wait` caller that learns it waits
   * behind another process says so to the layer (`LockLines.waitsBehind`). Arrival
   * mode: every `try` caller (a `wait` caller asks through `askOnArrival`).
   */
  take(caller: LineCaller<L>): L | Promise<L | null>;

  /**
   * Arrival mode, a `wait` caller: ask the backend now. Its answer is told through
   * the caller when the backend learns it — `caller.granted(lock)` once it holds
   * the key, `caller.refused(error)` when it may not — not through a promise, so
   * the layer's count of this process's waiters is never behind the backend's.
   * When the backend keeps the caller waiting (a place in its queue, a ride on this
   * process's hold), it asks `LockLines.waitsThere` first: the layer's `maxPending`.
   */
  askOnArrival?(caller: LineCaller<L>): void;

  /**
   * A key set at once (optional: without it a set is taken key by key). Each of
   * `callers` (one per key, in canonical order; all `try` callers) has its turn:
   * nobody of this process holds, asks for or waits for any of their keys. Ask the
   * backend for them all in one request, all or none: resolves with the locks in
   * the order of `callers`, or `null` when a key was busy — and then nothing of the
   * set is held; rejects with the error (nothing held either).
   */
  takeSet?(callers: readonly LineCaller<L>[]): Promise<L[] | null>;

  /**
   * After `take` answered anything but a lock: what the backend still winds down
   * for the key (an aborted wait's session being given back), which the next caller
   * of this process must wait for; `undefined` when nothing.
   */
  windingDown?(key: string): Promise<unknown> | undefined;

  /**
   * The holder lets go. `handOn`: a caller of this process waits and may take the
   * key in-process (the layer's bound allows it). Returns what to hand that caller
   * when the key stays taken in the backend, `undefined` once it is given back (or
   * a promise of either, while the backend is asked). A rejection means the key was
   * given back anyway (a session ended, a lease runs out): the next caller asks.
   */
  release(lock: L, handOn: boolean): K | undefined | Promise<K | undefined>;

  /** The next caller takes a handed key: its lock, or `undefined` when the handed key was lost on the way (the caller asks the backend). */
  adopt?(handed: K, caller: LineCaller<L>): L | undefined;

  /** Nobody here takes a handed key any more: give it back to the backend. */
  giveBack?(handed: K): Promise<unknown>;

  /** The error of a caller whose budget ran out while it waited in this process's line. */
  timeoutError(key: string, waitTimeoutMs: number): Error;

  /**
   * Arrival mode: `caller` leaves before its answer (its budget ran out, its signal
   * aborted, shutdown): its place at the backend is given up. Its `take` may still
   * settle; the layer then ignores the answer (a lock it brings is released).
   */
  withdraw?(caller: LineCaller<L>): void;

  /**
   * Arrival mode: `caller`'s budget ran out. `undefined`: it times out now; a number:
   * look again in that many ms (its ask is unanswered and the backend answered
   * nothing since: it may be gone, which the backend's own bound reports as its error).
   */
  overdue?(caller: LineCaller<L>): number | undefined;

  /** Shutdown: every ask in flight ends with `error(key)`. */
  stopAsking?(error: (key: string) => Error): void;
}
