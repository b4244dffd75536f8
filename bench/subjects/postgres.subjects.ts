import { createHash } from 'node:crypto';
import advisoryLock from 'advisory-lock';
import { Client, Pool, type PoolClient } from 'pg';
import { PostgresLockProvider } from 'nestjs-serialized';
import { lockServiceSubject } from './memory.subjects';
import { nestedOnOneSession, type LockSubject, type SubjectContext, type SubjectSpec } from './subject';

/** Connections of this library's lock pool per process (its default). */
export const OURS_LOCK_POOL_SIZE = 10;

export const oursPostgres: SubjectSpec = {
  id: 'ours',
  label: 'nestjs-serialized',
  kind: 'ours',
  backend: 'postgres',
  settings: `new PostgresLockProvider({ connectionString, keyPrefix }) (lock pool ${OURS_LOCK_POOL_SIZE} connections, waitTimeoutMs 10 s, defaults: handoff 'strict'); LockService.run(key, fn)`,
  canWait: true,
  connectionsFor: () => OURS_LOCK_POOL_SIZE,
  async open(context: SubjectContext): Promise<LockSubject> {
    return lockServiceSubject(new PostgresLockProvider({ connectionString: context.databaseUrl, keyPrefix: `${context.prefix}:ours` }));
  },
};

/**
 * This library with local hand-off in cohort mode (the default is `'strict'`): scenario 3
 * only, reported under ids of its own (`3.postgres.cohort.*`) against the same peers.
 */
export const oursPostgresCohort: SubjectSpec = {
  id: 'ours-cohort',
  label: "nestjs-serialized (handoff: 'cohort')",
  kind: 'ours',
  backend: 'postgres',
  settings: `new PostgresLockProvider({ connectionString, keyPrefix, handoff: 'cohort' }) (up to 32 local hand-offs in a row, otherwise as ours); LockService.run(key, fn)`,
  canWait: true,
  connectionsFor: () => OURS_LOCK_POOL_SIZE,
  async open(context: SubjectContext): Promise<LockSubject> {
    return lockServiceSubject(
      new PostgresLockProvider({ connectionString: context.databaseUrl, keyPrefix: `${context.prefix}:ours-cohort`, handoff: 'cohort' }),
    );
  },
};

/**
 * advisory-lock as documented: `advisoryLock(url)(name).withLock(fn)`. It opens a
 * new pg.Client for every lock() and ends it on unlock, so N simultaneous callers
 * hold N server connections.
 */
export const advisoryLockPeer: SubjectSpec = {
  id: 'advisory-lock',
  label: 'advisory-lock',
  kind: 'peer',
  backend: 'postgres',
  settings:
    'advisoryLock(url)(name).withLock(fn) — its only mode: a new connection per lock() (pg_advisory_lock), closed after pg_advisory_unlock',
  canWait: true,
  connectionsFor: (concurrency) => concurrency,
  async open(context: SubjectContext): Promise<LockSubject> {
    const createMutex = advisoryLock(context.databaseUrl);
    return {
      async withLock(key, fn) {
        await createMutex(`${context.prefix}:advisory-lock:${key}`).withLock(async () => fn());
      },
      close: async () => undefined,
    };
  },
};

/** First 8 bytes of SHA-256 as a signed 64-bit key, as a careful implementation hashes. */
export function advisoryKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/**
 * The physical floor: one connection, `SELECT pg_advisory_lock($1)` then
 * `SELECT pg_advisory_unlock($1)` (result checked). Only uncontended: two callers
 * on one session would both "hold" the session-level lock.
 */
export const postgresFloor: SubjectSpec = {
  id: 'floor',
  label: 'floor: pg_advisory_lock + unlock',
  kind: 'floor',
  backend: 'postgres',
  settings:
    'one pg.Client; SELECT pg_advisory_lock($1::bigint); SELECT pg_advisory_unlock($1::bigint) (SHA-256 64-bit key, named prepared statements)',
  canWait: false,
  connectionsFor: () => 1,
  async open(context: SubjectContext): Promise<LockSubject> {
    const client = new Client({ connectionString: context.databaseUrl });
    await client.connect();
    let chain: Promise<unknown> = Promise.resolve();
    const run = async (key: string, fn: () => void | Promise<void>): Promise<void> => {
      const id = advisoryKey(`${context.prefix}:floor:${key}`);
      await client.query({ name: 'nsbench_lock', text: 'SELECT pg_advisory_lock($1::bigint)', values: [id] });
      try {
        await fn();
      } finally {
        const { rows } = await client.query({ name: 'nsbench_unlock', text: 'SELECT pg_advisory_unlock($1::bigint) AS ok', values: [id] });
        // A floor whose unlock failed must fail the run, whatever fn threw.
        // eslint-disable-next-line no-unsafe-finally -- deliberate: the unlock's failure is the finding
        if (rows[0]?.ok !== true) throw new Error('floor: pg_advisory_unlock returned false');
      }
    };
    return {
      // One session: calls are taken one after another, never interleaved on the session.
      withLock(key, fn) {
        const next = chain.then(() => run(key, fn));
        chain = next.catch(() => undefined);
        return next;
      },
      close: () => client.end(),
    };
  },
};

/**
 * Scenario 7's hand-rolled peer: what users write for a transfer without a multi-key
 * lock — a connection of pg's pool (default size 10), `pg_advisory_lock` on each key in
 * sorted order (sorting avoids the A→B / B→A deadlock), the work, the unlocks in reverse
 * order (each result checked), the connection back to the pool.
 */
export const postgresNested: SubjectSpec = {
  id: 'pg-advisory-nested',
  label: 'hand-rolled: pg_advisory_lock per key, sorted',
  kind: 'peer',
  backend: 'postgres',
  settings:
    'new pg.Pool() (10 connections); per call: pool.connect(); SELECT pg_advisory_lock($1::bigint) for each key in sorted order; fn; SELECT pg_advisory_unlock($1::bigint) in reverse order (result checked); client.release()',
  canWait: true,
  connectionsFor: (concurrency) => Math.min(concurrency, 10),
  async open(context: SubjectContext): Promise<LockSubject> {
    const pool = new Pool({ connectionString: context.databaseUrl });
    pool.on('error', () => undefined);
    const withLocks = nestedOnOneSession<PoolClient>({
      name: (key) => advisoryKey(`${context.prefix}:nested:${key}`),
      session: () => pool.connect(),
      async lock(client, id) {
        await client.query({ name: 'nsbench_nested_lock', text: 'SELECT pg_advisory_lock($1::bigint)', values: [id] });
      },
      async unlock(client, id) {
        const { rows } = await client.query({
          name: 'nsbench_nested_unlock',
          text: 'SELECT pg_advisory_unlock($1::bigint) AS ok',
          values: [id],
        });
        return rows[0]?.ok === true;
      },
      giveBack: (client, broken) => client.release(broken),
      unlockFailed: 'pg_advisory_unlock returned false',
    });
    return { withLock: (key, fn) => withLocks([key], fn), withLocks, close: () => pool.end() };
  },
};

export const postgresSubjects: SubjectSpec[] = [oursPostgres, advisoryLockPeer, postgresFloor];
