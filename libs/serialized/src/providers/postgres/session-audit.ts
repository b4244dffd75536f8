import type { HeldLocks } from '../../internal/held-locks';
import type { LocalHandoffs } from './local-handoff';
import type { LockAttempt } from './lock.attempt';
import type { LockConnection, UnownedLock } from './lock-connection';
import type { LockConnectionPool } from './lock-connection.pool';
import type { PostgresLock } from './postgres-lock';

/** Who in a provider may own an advisory lock on one of its sessions. */
export interface LockOwners {
  readonly held: HeldLocks<PostgresLock>;
  readonly attempts: ReadonlyMap<string, LockAttempt>;
  readonly handoffs: LocalHandoffs;
  readonly pool: LockConnectionPool;
}

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
  constructor(
    private readonly owners: LockOwners,
    private readonly report: (message: string) => void,
  ) {}

  /** Audits every open session that is not waiting in the server's lock queue; resolves with what was given back. */
  async all(): Promise<UnownedLock[]> {
    const found = await Promise.all([...this.owners.pool.shareable()].map((connection) => this.session(connection)));
    return found.flat();
  }

  /** Audits one session. */
  async session(connection: LockConnection): Promise<UnownedLock[]> {
    const unowned = await connection.audit(() => this.ownedOn(connection));
    for (const lock of unowned) {
      this.report(
        `PostgreSQL session ${lock.pid} held advisory lock ${lock.lockKey}${lock.key === undefined ? '' : ` (key "${lock.key}")`} ` +
          'for no holder, hand-off or attempt of this provider; it was released',
      );
    }
    return unowned;
  }

  /** Asked when the audit statement is sent: which claimed lock keys of `connection` someone stands behind. */
  private ownedOn(connection: LockConnection): (lockKey: string) => boolean {
    const { held, attempts, handoffs } = this.owners;
    const owned = handoffs.handedOn(connection);
    for (const lock of held.values()) if (lock.connection === connection) owned.add(lock.lockKey);
    // An attempt owns its key on any session: it may be between statements or winding down.
    for (const attempt of attempts.values()) owned.add(attempt.lockKey);
    return (lockKey) => owned.has(lockKey);
  }
}
