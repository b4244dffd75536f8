import { LockBackendError } from '../errors';

/**
 * The shutdown half every provider shares: which locks are held, whether new
 * acquisitions are still accepted, and waiting (up to a grace period) for the
 * holders to finish. A lock is never released for its holder: the holder's
 * handler may still run.
 */
export class HeldLocks<T extends { readonly key: string }> {
  private readonly held = new Set<T>();
  /** Locks held per key, when asked for (see `holds`). */
  private readonly perKey: Map<string, number> | undefined;
  private closingSince: number | undefined;
  private drained: (() => void) | undefined;

  /** @param countKeys keep a count per key, so that `holds(key)` can answer */
  constructor(countKeys = false) {
    if (countKeys) this.perKey = new Map();
  }

  get size(): number {
    return this.held.size;
  }

  get closing(): boolean {
    return this.closingSince !== undefined;
  }

  /** Throws `LockBackendError` once shutdown began. */
  assertOpen(key: string): void {
    if (this.closing) throw LockBackendError.shuttingDown(key);
  }

  /** Whether a lock on `key` is held (needs `countKeys`). */
  holds(key: string): boolean {
    return this.perKey?.has(key) === true;
  }

  add(lock: T): void {
    this.held.add(lock);
    if (this.perKey) this.perKey.set(lock.key, (this.perKey.get(lock.key) ?? 0) + 1);
  }

  delete(lock: T): void {
    if (!this.held.delete(lock)) return;
    if (this.perKey) {
      const count = this.perKey.get(lock.key)!;
      if (count > 1) this.perKey.set(lock.key, count - 1);
      else this.perKey.delete(lock.key);
    }
    if (this.held.size === 0) this.drained?.();
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
