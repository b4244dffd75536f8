import { LockLostError } from '../../errors';
import { LocalLock } from '../../local/local.lock';
import { DONE } from '../../internal/release.after';
import { turnNow } from '../../internal/turn.clock';
import type { Lock } from '../../lock.interface';
import type { LockLines } from '../../local/lock.lines';

/** Where an in-memory lock reports its release: the provider's lines. */
export type InMemoryLockOwner = Pick<LockLines<InMemoryLock>, 'released'>;

/** A key held in this process. Nothing can take it away, so it never expires nor is lost. */
export class InMemoryLock extends LocalLock implements Lock {
  /**
   * @param token the fencing token as a number (exact up to 2^53: 285 years at a
   *   million acquisitions a second); a bigint is made only when someone reads it
   */
  constructor(
    readonly key: string,
    private readonly token: number,
    private readonly owner: InMemoryLockOwner,
  ) {
    // The clock as read once per turn of the event loop: a read per lock would cost as much as the lock.
    super(turnNow());
  }

  get fencingToken(): bigint {
    return BigInt(this.token);
  }

  async extend(): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
  }

  /** Done before it returns (the next waiter holds the key): it returns `DONE` itself, which `OwnedLock` need not await. */
  release(): Promise<void> {
    return this.markReleased() ? this.owner.released(this) : DONE;
  }
}
