import { SessionLock, type SessionLockOwner } from '../../local/session.lock';
import type { Lock } from '../../lock.interface';
import type { LockSession, SessionHolder } from './lock.session';
import type { HandOffMode } from '../../acquire-options.interface';

/**
 * The run of local holders one server grant started (they take their tokens from
 * its session's block): shared by every holder of that run.
 */
export interface HandOffRun {
  /** How the run's current holder passes the key on at release (see `HandOffMode`). */
  readonly mode: HandOffMode;
}

/** What a held lock asks of its provider. */
export type PostgresLockOwner = SessionLockOwner<PostgresLock>;

/**
 * A session-level advisory lock held on one connection of the lock pool. The
 * connection stays with the lock until release; if its session ends (backend
 * terminated, network dropped, server restarted) the lock is gone on the server
 * and `signal` aborts with `LockLostError`.
 */
export class PostgresLock extends SessionLock<PostgresLock> implements Lock, SessionHolder {
  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    /** The 64-bit advisory lock key, as a decimal string. */
    readonly lockKey: string,
    /** The session that holds the lock. */
    readonly session: LockSession,
    owner: PostgresLockOwner,
    /** The run of local hand-offs this lock belongs to (undefined: its session cannot hand off). */
    readonly handOffRun?: HandOffRun,
  ) {
    super(owner, 'PostgreSQL');
  }
}
