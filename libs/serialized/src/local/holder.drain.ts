import { LockBackendError } from '../errors';

/**
 * The holders of locks taken through one provider, and the shutdown drain that
 * waits for them (the shutdown half every provider shares): how many locks are
 * held (and which), whether new acquisitions are still accepted, and waiting (up
 * to a grace period) for the holders to finish. A lock is never released for its
 * holder: the holder's handler may still run.
 */
export class HolderDrain<T extends { readonly key: string }> {
  /** The locks themselves, unless only their number is needed (`track: false`). */
  private readonly held: Set<T> | undefined;
  private count = 0;
  /** Locks held per key, when asked for (see `holds`). */
  private readonly perKey: Map<string, number> | undefined;
  private closingSince: number | undefined;
  private drained: (() => void) | undefined;

  /**
   * @param countKeys keep a count per key, so that `holds(key)` can answer
   * @param track keep the locks (for `values()`); a provider that never visits
   *   them (in-memory) counts them only, and must then delete each lock once
   */
  constructor(countKeys = false, track = true) {
    if (countKeys) this.perKey = new Map();
    if (track) this.held = new Set();
  }

  get size(): number {
    return this.count;
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
    if (this.held) {
      if (this.held.has(lock)) return;
      this.held.add(lock);
    }
    this.count++;
    if (this.perKey) this.perKey.set(lock.key, (this.perKey.get(lock.key) ?? 0) + 1);
  }

  delete(lock: T): void {
    if (this.held && !this.held.delete(lock)) return;
    this.count--;
    if (this.perKey) {
      const count = this.perKey.get(lock.key)!;
      if (count > 1) this.perKey.set(lock.key, count - 1);
      else this.perKey.delete(lock.key);
    }
    if (this.count === 0) this.drained?.();
  }

  /** The held locks (none when constructed with `track: false`). */
  values(): IterableIterator<T> {
    return (this.held ?? new Set<T>()).values();
  }

  /** Stops accepting acquisitions. */
  close(): void {
    this.closingSince ??= Date.now();
  }

  /** Resolves `true` when every held lock was released, `false` after `graceMs`. */
  drain(graceMs: number): Promise<boolean> {
    this.close();
    if (this.count === 0) return Promise.resolve(true);
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
