import { performance } from 'node:perf_hooks';
import type { QueryArrayConfig } from 'pg';
import { LockBackendError } from '../../errors';
import { holderHere } from '../../inspect/holder.here';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import type { LockHolderInfo, LockInfo } from '../../inspect/lock-info.interface';
import type { LockLines } from '../../local/lock.lines';
import { advisoryLockKey } from './advisory-key.hash';
import { holdShapeOf } from './hold.shape';
import { LockSession } from './lock.session';
import type { LockSessions } from './lock.sessions';
import type { HandedLock } from './postgres.backend';
import type { PostgresLock } from './postgres.lock';

/** Most holder rows read for one key (one exclusive holder, or the shared holds of readers and groups). */
const MAX_HOLDER_ROWS = 16;

/**
 * The advisory lock rows of one key (`$1`, the 64-bit key; objsubid 1: a bigint
 * key, not the two-int4 wait marks) in this database, except those of the
 * sessions `$2` (this provider's own, which the local layer describes better):
 * holders first, at most `MAX_HOLDER_ROWS`, each with the count of the sessions
 * waiting (a window over every row, computed before the limit), and whether the
 * holder is a reader: a reader and a group member both hold the key in share mode,
 * and only a reader also holds both of the readers' shape marks (`$3`, `$4`: see
 * `hold.shape.ts`) in share mode. Two reads of `pg_locks` in one statement (it takes
 * no lock of its own: the lock manager is read in shared mode).
 */
const INSPECT = {
  name: 'nestjs-serialized:inspect',
  text:
    'WITH readers AS MATERIALIZED (SELECT m.pid FROM pg_locks m ' +
    "WHERE m.locktype = 'advisory' AND m.objsubid = 1 AND m.granted AND m.mode = 'ShareLock' " +
    'AND m.database = (SELECT oid FROM pg_database WHERE datname = current_database()) ' +
    'AND ((m.classid = (($3::bigint >> 32) & 4294967295)::oid AND m.objid = ($3::bigint & 4294967295)::oid) ' +
    'OR (m.classid = (($4::bigint >> 32) & 4294967295)::oid AND m.objid = ($4::bigint & 4294967295)::oid)) ' +
    'GROUP BY m.pid HAVING count(DISTINCT m.objid) = 2) ' +
    'SELECT l.pid, a.application_name, l.mode, l.granted, count(*) FILTER (WHERE NOT l.granted) OVER () AS waiting, ' +
    'EXISTS (SELECT 1 FROM readers r WHERE r.pid = l.pid) AS reader ' +
    'FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid ' +
    "WHERE l.locktype = 'advisory' AND l.objsubid = 1 " +
    'AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) ' +
    'AND l.classid = (($1::bigint >> 32) & 4294967295)::oid AND l.objid = ($1::bigint & 4294967295)::oid ' +
    'AND l.pid <> ALL($2::int[]) ' +
    `ORDER BY l.granted DESC, l.pid LIMIT ${MAX_HOLDER_ROWS}`,
};

/**
 * `LockService.inspect` for the PostgreSQL driver: this process's holder and
 * waiters from the local layer, and every other session's hold and wait of the
 * key from `pg_locks` — one statement on a lock session (shared with held locks,
 * like a try; a free session is waited for up to `connectTimeoutMs`). Other processes' holders come with
 * their session's `application_name` and backend pid; PostgreSQL keeps neither
 * their fencing token nor when they took the key. Read-only.
 */
export class PostgresLockInspector implements KeyInspector {
  constructor(
    private readonly sessions: LockSessions,
    private readonly keyPrefix: string,
    private readonly lines: () => Pick<LockLines<PostgresLock, HandedLock>, 'inspectHere'>,
  ) {}

  async inspect(key: string): Promise<LockInfo> {
    const lockKey = advisoryLockKey(this.keyPrefix, key);
    const rows = await this.read(lockKey, holdShapeOf(this.keyPrefix, key, lockKey, true, 0).marks);
    const here = this.lines().inspectHere(key);
    const holders: LockHolderInfo[] = [];
    const now = performance.now();
    // Several holders of this process when they hold the key together (`concurrency`, `shared`).
    for (const lock of here.holder ? [here.holder, ...(here.others ?? [])] : [])
      holders.push(
        holderHere(lock, now, { instance: `${this.sessions.applicationName}#${lock.session.pid}`, shared: here.shared === true }),
      );
    let elsewhere = 0;
    for (const [pid, applicationName, mode, granted, waiting, reader] of rows) {
      elsewhere = Number(waiting);
      // A group member holds the key in share mode too; only a reader holds the readers' marks.
      if (granted === true)
        holders.push({ here: false, instance: `${applicationName ?? ''}#${pid}`, shared: mode === 'ShareLock' && reader === true });
    }
    return { key, holders, waiting: here.waiting + elsewhere, waitingHere: here.waiting };
  }

  private async read(lockKey: string, readerMarks: readonly string[]): Promise<unknown[][]> {
    const { pool, connectTimeoutMs } = this.sessions;
    const taken = pool.take({
      shared: true,
      timeoutMs: connectTimeoutMs,
      timeoutError: () => new LockBackendError(`PostgreSQL: no lock session free within ${connectTimeoutMs} ms to inspect a key`),
      backendError: (cause) => new LockBackendError(`PostgreSQL cannot be reached: ${(cause as Error)?.message ?? cause}`, { cause }),
    });
    const session = taken instanceof LockSession ? taken : await taken.promise;
    try {
      const config: QueryArrayConfig = {
        ...INSPECT,
        values: [lockKey, pool.sessions().map((open) => open.pid), readerMarks[0], readerMarks[1]],
        rowMode: 'array',
      };
      // Bounded by the session's watchdog like every statement; never cut short here, since
      // ending a session shared with held locks would take their locks with it.
      return await session.queryRows(config);
    } finally {
      pool.release(session);
    }
  }
}
