import { LockBusyError } from '../errors/lock-busy.error';

/**
 * The waiters one provider instance may have across all keys (`maxPendingTotal`):
 * what bounds a process's memory when many keys each stay under their own
 * `maxPending`. One per provider instance, never shared between apps. A caller
 * that becomes the holder at once is not a waiter and takes no place.
 */
export class PendingBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Waiters counted right now. */
  get waiting(): number {
    return this.used;
  }

  /** Takes a place for one more waiter; `false` when the cap is reached. */
  take(): boolean {
    if (this.used >= this.limit) return false;
    this.used++;
    return true;
  }

  /** A waiter left (it holds the key now, gave up, timed out or was refused). */
  give(): void {
    if (this.used > 0) this.used--;
  }

  /** The error for a caller refused because the cap is reached (429 over HTTP). */
  busyError(key: string): LockBusyError {
    return new LockBusyError(key, 'max-pending-total', { maxPendingTotal: this.limit });
  }
}
