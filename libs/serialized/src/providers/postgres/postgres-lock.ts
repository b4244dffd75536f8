import { LockLostError } from '../../errors';
import { LocalLock } from '../../local/local-lock';
import type { Lock } from '../../lock.interface';
import type { LockConnection, SessionHolder } from './lock-connection';
import type { HandOffMode } from '../../acquire-options.interface';

/** The run of local holders one server grant started: shared by every holder of that run. */
export interface Cohort {
  /** How the run's current holder passes the key on at release (see `HandOffMode`). */
  readonly mode: HandOffMode;
}

/** What a held lock asks of its provider (`ProcessLocks`). */
export interface PostgresLockOwner {
  /** Unlocks on the server and frees the key in this process (called once). */
  releaseLock(lock: PostgresLock): Promise<void>;
  /** Checks that the lock's session is alive and unchanged. */
  checkLock(lock: PostgresLock): Promise<void>;
}

/**
 * A session-level advisory lock held on one connection of the lock pool. The
 * connection stays with the lock until release; if its session ends (backend
 * terminated, network dropped, server restarted) the lock is gone on the server
 * and `signal` aborts with `LockLostError`.
 */
export class PostgresLock extends LocalLock implements Lock, SessionHolder {
  private releasing: Promise<void> | undefined;

  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    /** The 64-bit advisory lock key, as a decimal string. */
    readonly lockKey: string,
    /** The session that holds the lock. */
    readonly connection: LockConnection,
    private readonly owner: PostgresLockOwner,
    /** The run of local hand-offs this lock belongs to (undefined: its session cannot hand off). */
    readonly cohort?: Cohort,
  ) {
    super();
  }

  /** Called by the connection when its session ends while it holds this lock. */
  sessionLost(reason: Error): void {
    if (this.released) return;
    this.markLost(new LockLostError(this.key, `its PostgreSQL session ended (${reason.message})`, reason));
  }

  /**
   * A session lock has no lease to push: it lasts as long as its session, which
   * the provider pings while the lock is held. This checks the session now and
   * rejects with `LockLostError` if the lock is no longer ours.
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
