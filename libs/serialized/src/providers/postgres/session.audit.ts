import type { LockSession, UnownedLock } from './lock.session';
import type { LockSessionPool } from '../sessions/lock-session.pool';

/**
 * The invariant every lock session keeps, checked against the server: each
 * advisory lock PostgreSQL shows for a session belongs to a holder, a local
 * hand-off on its way, an attempt in flight or a release in flight of this
 * provider. One that belongs to nobody would freeze its key for every process for
 * as long as the session lives (it keeps serving other keys): it is given back at
 * once and logged as an error. Run on every session by the liveness checks, and on
 * demand (`PostgresLockProvider#auditLocks`).
 */
export class SessionAudit {
  /**
   * @param pool the sessions to audit
   * @param ownedOn asked when a session's audit statement is sent: the lock keys of
   *   that session someone in this process stands behind (a holder, a hand-off on
   *   its way, an attempt)
   * @param report logs one line per lock found without an owner
   */
  constructor(
    private readonly pool: LockSessionPool<LockSession>,
    private readonly ownedOn: (session: LockSession) => ReadonlySet<string>,
    private readonly report: (message: string) => void,
  ) {}

  /** Audits every open session that is not waiting in the server's lock queue; resolves with what was given back. */
  async all(): Promise<UnownedLock[]> {
    const found = await Promise.all([...this.pool.shareable()].map((session) => this.session(session)));
    return found.flat();
  }

  /** Audits one session. */
  async session(session: LockSession): Promise<UnownedLock[]> {
    const unowned = await session.audit(() => {
      const owned = this.ownedOn(session);
      return (lockKey) => owned.has(lockKey);
    });
    for (const lock of unowned) {
      this.report(
        `PostgreSQL session ${lock.pid} held advisory lock ${lock.lockKey}${lock.key === undefined ? '' : ` (key "${lock.key}")`} ` +
          'for no holder, hand-off or attempt of this provider; it was released',
      );
    }
    return unowned;
  }
}
