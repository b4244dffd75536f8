/** Releases a held key; what `LockService` runs a section under. */
export interface Releasable {
  /** Returns {@link DONE} itself when the release is already complete; never rejects. */
  release(): Promise<void>;
}

/** An already settled release: what a release returns when nothing is left to wait for. */
export const DONE: Promise<void> = Promise.resolve();

/**
 * Releases `held` once `result` (what the section returned) settles, and gives the
 * section's outcome back. A result that is not a promise nor a thenable (a
 * synchronous section) is released at once and returned as is: no promise, and the
 * next waiter is handed the key without a turn of the microtask queue.
 */
export function releaseAfter<T>(held: Releasable, result: Promise<T> | T): Promise<T> | T {
  if (!(result instanceof Promise) && typeof (result as PromiseLike<T> | null)?.then !== 'function') {
    const released = held.release();
    return released === DONE ? result : released.then(() => result as T);
  }
  return Promise.resolve(result).then(
    (value) => {
      const released = held.release();
      return released === DONE ? value : released.then(() => value);
    },
    (error: unknown) => releaseAndThrow(held, error),
  );
}

/** Releases `held` after its section threw `error`, then throws it (or rejects with it, once a pending release settles). */
export function releaseAndThrow(held: Releasable, error: unknown): Promise<never> {
  const released = held.release();
  if (released === DONE) throw error;
  return released.then(() => Promise.reject(error));
}
