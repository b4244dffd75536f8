/** Releases a held key; what `LockService` runs a section under. */
export interface Releasable {
  /** Returns {@link DONE} itself when the release is already complete; never rejects. */
  release(): Promise<void>;
}

/** An already settled release: what a release returns when nothing is left to wait for. */
export const DONE: Promise<void> = Promise.resolve();

/**
 * Releases `held` once `result` (what the section returned) settles, and gives the
 * section's outcome back — without waiting for the release's reply: the release is
 * on its way to the backend (queued on the lock's connection, before any later
 * command of this process on that key), a later caller of this process waits for
 * it to apply, and a failure is logged and covered by the lease or the session's
 * end (docs/semantics.md, "When run() resolves"). A result that is not a promise nor
 * a thenable (a synchronous section) is released at once and returned as is: no
 * promise, and the next waiter is handed the key without a turn of the microtask queue.
 */
export function releaseAfter<T>(held: Releasable, result: Promise<T> | T): Promise<T> | T {
  return isPromiseLike(result) ? releaseWhenSettled(held, result) : releaseReturning(held, result);
}

/** {@link releaseAfter} for a section that returned a promise (or thenable): released when it settles. */
export function releaseWhenSettled<T>(held: Releasable, result: PromiseLike<T>): Promise<T> {
  return Promise.resolve(result).then(
    (value) => releaseReturning(held, value),
    (error: unknown) => releaseAndThrow(held, error),
  );
}

/** {@link releaseAfter} for a section that returned `value` synchronously: released at once. */
export function releaseReturning<T>(held: Releasable, value: T): T {
  void held.release();
  return value;
}

/** Releases `held` after its section threw `error`, then throws it. */
export function releaseAndThrow(held: Releasable, error: unknown): never {
  void held.release();
  throw error;
}

/** Whether a section's result is still to settle: a promise or any thenable. */
export function isPromiseLike<T>(result: Promise<T> | PromiseLike<T> | T): result is PromiseLike<T> {
  return result instanceof Promise || typeof (result as PromiseLike<unknown> | null)?.then === 'function';
}
