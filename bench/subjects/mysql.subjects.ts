import { createConnection } from 'mysql2/promise';
import { MysqlLockProvider } from 'nestjs-serialized';
import { lockServiceSubject } from './memory.subjects';
import type { LockSubject, SubjectContext, SubjectSpec } from './subject';

/** Connections of this library's lock pool per process (its default). */
const OURS_LOCK_POOL_SIZE = 10;

export const oursMysql: SubjectSpec = {
  id: 'ours',
  label: 'nestjs-serialized',
  kind: 'ours',
  backend: 'mysql',
  settings: `new MysqlLockProvider({ url, keyPrefix }) (lock pool ${OURS_LOCK_POOL_SIZE} connections, waitTimeoutMs 10 s); LockService.run(key, fn)`,
  canWait: true,
  connectionsFor: () => OURS_LOCK_POOL_SIZE,
  async open(context: SubjectContext): Promise<LockSubject> {
    return lockServiceSubject(new MysqlLockProvider({ url: context.mysqlUrl, keyPrefix: `${context.prefix}:ours` }));
  },
};

/**
 * The physical floor: one connection, `SELECT GET_LOCK(?, 10)` then
 * `SELECT RELEASE_LOCK(?)` (result checked), the name as long as ours. No fencing
 * token. Only uncontended: a session may take its own named lock twice.
 */
export const mysqlFloor: SubjectSpec = {
  id: 'floor',
  label: 'floor: GET_LOCK + RELEASE_LOCK',
  kind: 'floor',
  backend: 'mysql',
  settings: 'one mysql2 connection; SELECT GET_LOCK(?, 10); SELECT RELEASE_LOCK(?) (result checked); no fencing token',
  canWait: false,
  connectionsFor: () => 1,
  async open(context: SubjectContext): Promise<LockSubject> {
    const connection = await createConnection({ uri: context.mysqlUrl });
    let chain: Promise<unknown> = Promise.resolve();
    const run = async (key: string, fn: () => void | Promise<void>): Promise<void> => {
      const name = `${context.prefix}:floor:${key}`.slice(-64);
      await connection.query('SELECT GET_LOCK(?, 10)', [name]);
      try {
        await fn();
      } finally {
        const [rows] = await connection.query({ sql: 'SELECT RELEASE_LOCK(?)', rowsAsArray: true }, [name]);
        // A floor whose unlock failed must fail the run, whatever fn threw.
        // eslint-disable-next-line no-unsafe-finally -- deliberate: the unlock's failure is the finding
        if ((rows as unknown[][])[0]?.[0] !== 1) throw new Error('floor: RELEASE_LOCK did not return 1');
      }
    };
    return {
      // One session: calls are taken one after another, never interleaved on the session.
      withLock(key, fn) {
        const next = chain.then(() => run(key, fn));
        chain = next.catch(() => undefined);
        return next;
      },
      close: () => connection.end(),
    };
  },
};

export const mysqlSubjects: SubjectSpec[] = [oursMysql, mysqlFloor];
