import { LockBackendError } from '../errors';

/**
 * The shutdown half every provider shares: which locks are held, whether new
 * acquisitions are still accepted, and waiting (up to a grace period) for the
 * holders to finish. A lock is never released for its holder: the holder's
 * handler may still run.
 */
export class HeldLocks<T> {
  private readonly held = new Set<T>();
  private closingSince: number | undefined;
  private drained: (() => void) | undefined;

  get size(): number {
    return this.held.size;
  }

  get closing(): boolean {
    return this.closingSince !== undefined;
  }

  /** Throws `LockBackendError` once shutdown began. */
  assertOpen(key: string): void {
    if (this.closing) throw new LockBackendError('The lock provider is shutting down', { key });
  }

  add(lock: T): void {
    this.held.add(lock);
  }

  /** Returns whether `lock` was held. */
  delete(lock: T): boolean {
    if (!this.held.delete(lock)) return false;
    if (this.held.size === 0) this.drained?.();
    return true;
  }

  values(): IterableIterator<T> {
    return this.held.values();
  }

  /** Stops accepting acquisitions. */
  close(): void {
    this.closingSince ??= Date.now();
  }

  /** Resolves `true` when every held lock was released, `false` after `graceMs`. */
  drain(graceMs: number): Promise<boolean> {
    this.close();
    if (this.held.size === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.drained = undefined;
        resolve(false);
      }, graceMs);
      this.drained = () => {
        clearTimeout(timer);
        this.drained = undefined;
        resolve(true);
      };
    });
  }
}
