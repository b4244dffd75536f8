import { LockLostError } from '../errors';
import { LocalLock } from './local.lock';

/** What a lock held on a database session asks of its provider. */
export interface SessionLockOwner<L> {
  /** Gives the lock back on the server and frees the key in this process (called once). */
  releaseLock(lock: L): Promise<void>;
  /** Checks that the lock's session is alive and unchanged. */
  checkLock(lock: L): Promise<void>;
}

/**
 * A lock that lasts as long as the database session holding it (a PostgreSQL
 * advisory lock, a MySQL named lock): no lease to push, a loss when the session
 * ends, and one release through its provider. The drivers differ only in how they
 * reach the session; what a holder sees is written here once.
 */
export abstract class SessionLock<L extends SessionLock<L>> extends LocalLock {
  abstract readonly key: string;
  private releasing: Promise<void> | undefined;

  /** @param database named in the loss's message ("its PostgreSQL session ended …") */
  protected constructor(
    private readonly owner: SessionLockOwner<L>,
    private readonly database: string,
  ) {
    super();
  }

  /** Called by the session when it ends while it holds this lock. */
  sessionLost(reason: Error): void {
    if (this.released) return;
    this.markLost(new LockLostError(this.key, `its ${this.database} session ended (${reason.message})`, reason));
  }

  /**
   * A session lock has no lease to push: it lasts as long as its session, which the
   * provider pings while the lock is held. This checks the session now and rejects
   * with `LockLostError` if the lock is no longer ours.
   */
  async extend(): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
    if (this.lost) throw this.lost;
    await this.owner.checkLock(this as unknown as L);
  }

  release(): Promise<void> {
    if (this.markReleased()) this.releasing = this.owner.releaseLock(this as unknown as L);
    return this.releasing!;
  }
}
