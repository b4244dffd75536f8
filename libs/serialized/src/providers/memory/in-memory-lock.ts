import { LockLostError } from '../../errors';
import { LockState } from '../../internal/lock-state';
import type { Lock } from '../../lock.interface';

/** Shared by every release: an in-memory release is done before it returns. */
const RELEASED = Promise.resolve();

/** A key held in this process. Nothing can take it away, so it never expires nor is lost. */
export class InMemoryLock extends LockState implements Lock {
  /**
   * @param token the fencing token as a number (exact up to 2^53: 285 years at a
   *   million acquisitions a second); a bigint is made only when someone reads it
   */
  constructor(
    readonly key: string,
    private readonly token: number,
    private readonly onRelease: (lock: InMemoryLock) => void,
  ) {
    super();
  }

  get fencingToken(): bigint {
    return BigInt(this.token);
  }

  async extend(): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
  }

  release(): Promise<void> {
    this.releaseNow();
    return RELEASED;
  }

  releaseNow(): void {
    if (this.markReleased()) this.onRelease(this);
  }
}
