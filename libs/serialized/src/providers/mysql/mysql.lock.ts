import { SessionLock, type SessionLockOwner } from '../../local/session.lock';
import type { Lock } from '../../lock.interface';
import type { MysqlSession, NamedLockHolder } from './mysql.session';

/** What a held lock asks of its provider. */
export type MysqlLockOwner = SessionLockOwner<MysqlLock>;

/**
 * A named lock (`GET_LOCK`) held on one session of the lock pool, which stays with
 * the lock until release. If the session ends (`KILL`, a cut network path, a server
 * restart) the server has freed the lock, and `signal` aborts with `LockLostError`.
 */
export class MysqlLock extends SessionLock<MysqlLock> implements Lock, NamedLockHolder {
  constructor(
    readonly key: string,
    readonly fencingToken: bigint,
    /** The named lock's name (`mysqlLockName`). */
    readonly name: string,
    /** The session that holds it. */
    readonly session: MysqlSession,
    owner: MysqlLockOwner,
  ) {
    super(owner, 'MySQL');
  }
}
