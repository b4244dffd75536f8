import { performance } from 'node:perf_hooks';
import type { LockLostError } from '../errors';

/**
 * The state every lock class shares: released or not, lost or not, and the
 * `signal` that reports a loss. The AbortController is made on first use (it
 * costs more than the rest of an uncontended in-memory acquisition, and most
 * holders never look at it); a loss that happens before anyone asked is kept and
 * aborts the signal as soon as it is made. A base class rather than a field, so a
 * lock costs one object. Not exported by the package: the lock classes' declarations extend it.
 */
export abstract class LocalLock {
  private controller: AbortController | undefined;
  private lostWith: LockLostError | undefined;
  private releasedFlag = false;

  /** @param acquiredAt `performance.now()` when this process got the key (`LockService.inspect`'s `heldForMs`) */
  constructor(readonly acquiredAt: number = performance.now()) {}

  /** Aborts, with a `LockLostError` as its reason, when the lock is lost while held. */
  get signal(): AbortSignal {
    this.checkNow();
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostWith) this.controller.abort(this.lostWith);
    }
    return this.controller.signal;
  }

  /**
   * Why the lock was lost, if it was; reading it never makes the signal. Reading it
   * also asks the lock whether its lease has run out by the monotonic clock
   * ({@link expiredNow}), so a section resuming after a stall past its lease sees
   * the loss at once, before any timer had a chance to run (and `signal` aborts then).
   */
  get lost(): LockLostError | undefined {
    this.checkNow();
    return this.lostWith;
  }

  /** Whether `release()` was called. */
  get released(): boolean {
    return this.releasedFlag;
  }

  /** Neither released nor lost. */
  protected get held(): boolean {
    return !this.releasedFlag && this.lostWith === undefined;
  }

  /** Records a release; false when it was already recorded (release is idempotent). */
  protected markReleased(): boolean {
    if (this.releasedFlag) return false;
    this.releasedFlag = true;
    return true;
  }

  /**
   * The loss to record now if the lock's lease has run out by the monotonic clock
   * (a lock with a lease overrides it); called while the lock is held, on every
   * read of `lost` and `signal`.
   */
  protected expiredNow(): LockLostError | undefined {
    return undefined;
  }

  private checkNow(): void {
    if (this.lostWith !== undefined || this.releasedFlag) return;
    const expired = this.expiredNow();
    if (expired) this.markLost(expired);
  }

  /** Records the loss and aborts `signal` with it (once; a later loss is ignored). */
  markLost(error: LockLostError): void {
    if (this.lostWith) return;
    this.lostWith = error;
    this.controller?.abort(error);
  }
}
