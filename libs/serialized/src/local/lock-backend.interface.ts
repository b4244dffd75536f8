import type { LineCaller } from './line-caller';

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
   * Only for a backend with nothing to ask (in-memory): `key` is free, and this is
   * its lock, made now. Its presence also says that releasing needs no backend.
   */
  takeNow?(key: string, leaseMs: number | undefined): L;

  /**
   * The caller's turn came (nobody of this process holds or asks for the key):
   * ask the backend. Resolves with the lock, with `null` when a try finds the key
   * busy, or rejects with the caller's error. A `wait` caller that learns it waits
   * behind another process says so to the layer (`LockLines.waitsBehind`).
   */
  take(caller: LineCaller<L>): L | Promise<L | null>;

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

  /** Shutdown: every ask in flight ends with `error(key)`. */
  stopAsking?(error: (key: string) => Error): void;
}
