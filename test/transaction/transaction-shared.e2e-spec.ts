import type { INestApplication } from '@nestjs/common';
import { LockService } from 'nestjs-serialized';
import { advisoryLockKey } from 'nestjs-serialized/providers/postgres/advisory-key.hash';
import { TEST_DATABASE_URL } from '../support/services';
import { deferred, sleep, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { createTransactionApp } from './support/transaction-app';

/**
 * Shared holders in transaction mode through the app's TypeORM: `shared: true`
 * takes `pg_advisory_xact_lock_shared`, so readers hold the key together in their
 * own transactions while a writer (and another session's exclusive lock) waits.
 */
describe('transaction mode with shared holders (typeorm)', () => {
  let pg: PgInspector;
  let app: INestApplication;
  let keyPrefix: string;
  let table: string;
  let accounts: string;
  let locks: LockService;

  beforeAll(async () => {
    pg = await PgInspector.connect();
    keyPrefix = uniquePrefix('tx-shared');
    table = `tx_shared_rewards_${process.pid}`;
    accounts = `tx_shared_accounts_${process.pid}`;
    await pg.query(`DROP TABLE IF EXISTS ${table}, ${accounts}`);
    await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
    await pg.query(`CREATE TABLE ${accounts} (id text PRIMARY KEY, balance int NOT NULL)`);
    ({ app } = await createTransactionApp({ adapter: 'typeorm', databaseUrl: TEST_DATABASE_URL, keyPrefix, table, accounts, poolSize: 6 }));
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await pg.query(`DROP TABLE IF EXISTS ${table}, ${accounts}`);
    await pg.close();
  });

  /** The modes in which the server holds `key`'s transaction lock now, granted ones only. */
  const modes = async (key: string) =>
    (
      await pg.query<{ mode: string }>(
        `SELECT mode FROM pg_locks WHERE locktype = 'advisory' AND granted
           AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint) ORDER BY mode`,
        [advisoryLockKey(keyPrefix, key)],
      )
    ).map((row) => row.mode);

  it('two readers inside together (ShareLock twice in the server); a writer waits for both and then holds it alone', async () => {
    const inside = new Set<string>();
    let overlaps = 0;
    const gates = [deferred(), deferred(), deferred()];
    const section = (name: string, gate: Promise<void>, writer: boolean) => async () => {
      if ((writer && inside.size > 0) || inside.has('W')) overlaps++;
      inside.add(name);
      await gate;
      inside.delete(name);
      return name;
    };
    const r1 = locks.run('doc:1', section('R1', gates[0].promise, false), { transaction: true, shared: true });
    const r2 = locks.run('doc:1', section('R2', gates[1].promise, false), { transaction: true, shared: true });
    await waitFor(() => inside.size === 2, 10_000, 'both readers inside');
    expect(await modes('doc:1')).toEqual(['ShareLock', 'ShareLock']);
    const w = locks.run('doc:1', section('W', gates[2].promise, true), { transaction: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(inside.has('W')).toBe(false);
    gates[0].resolve();
    gates[1].resolve();
    await waitFor(() => inside.has('W'), 10_000, 'writer inside');
    expect(await modes('doc:1')).toEqual(['ExclusiveLock']);
    gates[2].resolve();
    expect(await Promise.all([r1, r2, w])).toEqual(['R1', 'R2', 'W']);
    expect(overlaps).toBe(0);
    expect(await modes('doc:1')).toEqual([]);
  });

  it('inspect lists both readers of this process, shared, each with its token; one left, the other still listed', async () => {
    const gates = [deferred(), deferred()];
    const tokens: bigint[] = [];
    let inside = 0;
    const reader = (n: number) => async (lock: { fencingToken: bigint }) => {
      tokens[n] = lock.fencingToken;
      inside++;
      await gates[n].promise;
      inside--;
    };
    const r1 = locks.run('doc:3', reader(0), { transaction: true, shared: true });
    const r2 = locks.run('doc:3', reader(1), { transaction: true, shared: true });
    await waitFor(() => inside === 2, 10_000, 'both readers inside');
    const both = await locks.inspect('doc:3');
    expect({ ...both, holders: [...both.holders].sort((a, b) => (a.fencingToken! < b.fencingToken! ? -1 : 1)) }).toEqual({
      key: 'doc:3',
      holders: [...tokens]
        .sort((a, b) => (a < b ? -1 : 1))
        .map((fencingToken) => ({ fencingToken, here: true, shared: true, heldForMs: expect.any(Number) })),
      waiting: 0,
      waitingHere: 0,
    });
    gates[0].resolve();
    await r1;
    const one = await locks.inspect('doc:3');
    expect(one.holders).toEqual([{ fencingToken: tokens[1], here: true, shared: true, heldForMs: expect.any(Number) }]);
    gates[1].resolve();
    await r2;
    expect(await locks.inspect('doc:3')).toEqual({ key: 'doc:3', holders: [], waiting: 0, waitingHere: 0 });
  });

  it('a shared reader in reject mode is refused while another session holds the key exclusively', async () => {
    await pg.query('BEGIN');
    try {
      await pg.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryLockKey(keyPrefix, 'doc:2')]);
      const refused = await locks
        .run('doc:2', () => 'ran', { transaction: true, shared: true, mode: 'reject' })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect((refused as Error).name).toBe('LockBusyError');
    } finally {
      await pg.query('ROLLBACK');
    }
    expect(await locks.run('doc:2', () => 'ran', { transaction: true, shared: true, mode: 'reject' })).toBe('ran');
  });

  it('readers waiting in the server count toward maxPending: one reader beyond it and a writer behind them are refused', async () => {
    const key = 'doc:4';
    const outcome = (run: Promise<unknown>) =>
      run.then(
        (value) => value,
        (error: unknown) => `${(error as Error).name}:${(error as { reason?: string }).reason}`,
      );
    await pg.query('BEGIN');
    let readers: Promise<unknown>[] | undefined;
    try {
      await pg.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryLockKey(keyPrefix, key)]);
      const options = { transaction: true, shared: true, maxPending: 2 } as const;
      readers = [0, 1, 2].map((i) => outcome(locks.run(key, () => `R${i}`, options)));
      // Two readers wait in the server behind the other session; the third is one too many.
      await waitFor(
        async () =>
          (
            await pg.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ShareLock'
                 AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)`,
              [advisoryLockKey(keyPrefix, key)],
            )
          ).length === 2,
        10_000,
        'two readers to wait in the server',
      );
      expect(await Promise.race([...readers, sleep(5_000).then(() => 'nobody refused')])).toBe('LockBusyError:max-pending');
      // A writer of this process would wait behind the two readers here: it is one too many as well.
      expect(await outcome(locks.run(key, () => 'W', { transaction: true, maxPending: 2 }))).toBe('LockBusyError:max-pending');
    } finally {
      await pg.query('ROLLBACK');
    }
    const results = await Promise.all(readers ?? []);
    expect(results.filter((value) => value === 'LockBusyError:max-pending')).toHaveLength(1);
    expect(results.filter((value) => typeof value === 'string' && /^R\d$/.test(value))).toHaveLength(2);
    expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
  });
});
