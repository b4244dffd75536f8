import { performance } from 'node:perf_hooks';
import { LockBackendError } from '../../errors';
import { holderHere } from '../../inspect/holder.here';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import type { LockHolderInfo, LockInfo } from '../../inspect/lock-info.interface';
import type { LockLines } from '../../local/lock.lines';
import { mysqlLockName } from './mysql-lock.name';
import type { MysqlLock } from './mysql.lock';
import { MysqlSession } from './mysql.session';
import type { MysqlSessions } from './mysql.sessions';

/**
 * The named lock's holder (`IS_USED_LOCK`: its connection id) and the sessions
 * waiting for it in the server (`GET_LOCK` waits show as state `User lock` with the
 * statement, which names the lock, in the process list), except this provider's own
 * sessions, which the local layer describes. One statement; the process list is read
 * without a lock (bounded by the number of server connections).
 */
const INSPECT =
  'SELECT IS_USED_LOCK(?) AS holder, ' +
  "(SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND INFO LIKE ? AND FIND_IN_SET(ID, ?) = 0) AS waiting";

/**
 * `LockService.inspect` for the MySQL driver: this process's holder and waiters from
 * the local layer, another session's hold from `IS_USED_LOCK` and the sessions waiting
 * in the server from the process list (seen in full with the PROCESS privilege; without
 * it, only this user's sessions). MySQL keeps neither another holder's fencing token
 * nor when it took the key. Read-only.
 */
export class MysqlLockInspector implements KeyInspector {
  constructor(
    private readonly sessions: MysqlSessions,
    private readonly keyPrefix: string,
    private readonly lines: () => Pick<LockLines<MysqlLock>, 'inspectHere'>,
  ) {}

  async inspect(key: string): Promise<LockInfo> {
    const name = mysqlLockName(this.keyPrefix, key);
    const own = this.sessions.pool.sessions().map((session) => session.id);
    const [holderId, waitingThere] = ((await this.read(name, own)) as [number | string | null, number | string] | undefined) ?? [null, 0];
    const here = this.lines().inspectHere(key);
    const holders: LockHolderInfo[] = [];
    if (here.holder) holders.push(holderHere(here.holder, performance.now(), { instance: `mysql#${here.holder.session.id}` }));
    const holder = holderId === null || holderId === undefined ? undefined : Number(holderId);
    // A named lock has one holder, never a shared one.
    if (holder !== undefined && !own.includes(holder)) holders.push({ here: false, instance: `mysql#${holder}`, shared: false });
    const elsewhere = Number(waitingThere ?? 0);
    return { key, holders, waiting: here.waiting + elsewhere, waitingHere: here.waiting };
  }

  private async read(name: string, own: number[]): Promise<unknown> {
    const { pool } = this.sessions;
    const timeoutMs = this.sessions.connectTimeoutMs;
    const taken = pool.take({
      shared: true,
      timeoutMs,
      timeoutError: () => new LockBackendError(`MySQL: no lock session free within ${timeoutMs} ms to inspect a key`),
      backendError: (cause) => this.sessions.backendError(undefined, cause),
    });
    const session = taken instanceof MysqlSession ? taken : await taken.promise;
    try {
      // `query` answers the first row, as an array of its columns.
      return await session.query(INSPECT, [name, `%${name}%`, own.join(',')]);
    } finally {
      pool.release(session);
    }
  }
}
