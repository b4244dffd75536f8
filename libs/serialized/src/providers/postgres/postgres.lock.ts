import { SessionLock, type SessionLockOwner } from '../../local/session.lock';
import type { Lock } from '../../lock.interface';
import type { HoldShape } from './hold.shape';
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

/** How a lock holds its key beside other holders: shared (a reader), or in one slot of a group. */
export interface HeldBeside {
  /** A group's holder: the advisory key of its slot (decimal); undefined for a reader. */
  readonly slotKey: string | undefined;
  /** Its shape: the gate, the channel and the marks it holds besides the key. */
  readonly shape: HoldShape;
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
    /** How it holds the key beside others, if it does (`shared`, `concurrency` > 1). */
    readonly beside?: HeldBeside,
  ) {
    super(owner, 'PostgreSQL');
  }

  /** A group's holder: the advisory key of its slot (the session audit counts it as owned). */
  get slotKey(): string | undefined {
    return this.beside?.slotKey;
  }

  /** A reader's or a group holder's shape marks (the session audit counts them as owned). */
  get marks(): readonly string[] | undefined {
    return this.beside?.shape.marks;
  }
}
