import { LockLostError } from '../../errors';
import { LocalLock } from '../../local/local-lock';
import type { Lock } from '../../lock.interface';
import type { MysqlSession, NamedLockHolder } from './mysql-session';

/** What a held lock asks of its provider. */
export interface MysqlLockOwner {
  /** Releases on the server and frees the key in this process (called once). */
  releaseLock(lock: MysqlLock): Promise<void>;
  /** Checks that the lock's session is alive and unchanged. */
  checkLock(lock: MysqlLock): Promise<void>;
}

/**
 * A named lock (`GET_LOCK`) held on one session of the lock pool, which stays with
 * the lock until release. If the session ends (`KILL`, a cut network path, a server
 * restart) the server has freed the lock, and `signal` aborts with `LockLostError`.
 */
export class MysqlLock extends LocalLock implements Lock, NamedLockHolder {
  private releasing: Promise<void> | undefined;

  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    /** The named lock's name (`mysqlLockName`). */
    readonly name: string,
    /** The session that holds it. */
    readonly session: MysqlSession,
    private readonly owner: MysqlLockOwner,
  ) {
    super();
  }

  /** Called by the session when it ends while it holds this lock. */
  sessionLost(reason: Error): void {
    if (this.released) return;
    this.markLost(new LockLostError(this.key, `its MySQL session ended (${reason.message})`, reason));
  }

  /**
   * A named lock has no lease to push: it lasts as long as its session, which the
   * provider pings while the lock is held. This checks the session now and rejects
   * with `LockLostError` if the lock is no longer ours.
   */
  async extend(): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
    if (this.lost) throw this.lost;
    await this.owner.checkLock(this);
  }

  release(): Promise<void> {
    if (this.markReleased()) this.releasing = this.owner.releaseLock(this);
    return this.releasing!;
  }
}
