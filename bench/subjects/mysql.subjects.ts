import { createConnection, createPool, type PoolConnection } from 'mysql2/promise';
import { MysqlLockProvider } from 'nestjs-serialized';
import { lockServiceSubject } from './memory.subjects';
import { nestedOnOneSession, type LockSubject, type SubjectContext, type SubjectSpec } from './subject';

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

/**
 * Scenario 7's hand-rolled peer: a connection of a mysql2 pool (its default size, 10),
 * `GET_LOCK(name, 10)` on each key in sorted order (one session may hold several named
 * locks since MySQL 5.7 / MariaDB 10.0.2), the work, `RELEASE_LOCK` in reverse order
 * (each result checked), the connection back to the pool.
 */
export const mysqlNested: SubjectSpec = {
  id: 'get-lock-nested',
  label: 'hand-rolled: GET_LOCK per key, sorted',
  kind: 'peer',
  backend: 'mysql',
  settings:
    'createPool({ uri }) (10 connections); per call: pool.getConnection(); SELECT GET_LOCK(?, 10) for each key in sorted order (result checked); fn; SELECT RELEASE_LOCK(?) in reverse order (result checked); connection.release()',
  canWait: true,
  connectionsFor: (concurrency) => Math.min(concurrency, 10),
  async open(context: SubjectContext): Promise<LockSubject> {
    const pool = createPool({ uri: context.mysqlUrl });
    const withLocks = nestedOnOneSession<PoolConnection>({
      name: (key) => `${context.prefix}:nested:${key}`.slice(-64),
      session: () => pool.getConnection(),
      async lock(connection, name) {
        const [rows] = await connection.query({ sql: 'SELECT GET_LOCK(?, 10)', rowsAsArray: true }, [name]);
        if ((rows as unknown[][])[0]?.[0] !== 1) throw new Error(`GET_LOCK(${name}) did not return 1`);
      },
      async unlock(connection, name) {
        const [rows] = await connection.query({ sql: 'SELECT RELEASE_LOCK(?)', rowsAsArray: true }, [name]);
        return (rows as unknown[][])[0]?.[0] === 1;
      },
      giveBack: (connection, broken) => (broken ? connection.destroy() : connection.release()),
      unlockFailed: 'RELEASE_LOCK did not return 1',
    });
    return { withLock: (key, fn) => withLocks([key], fn), withLocks, close: () => pool.end() };
  },
};

export const mysqlSubjects: SubjectSpec[] = [oursMysql, mysqlFloor];
