import type { INestApplication } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { LockService, TransactionIsolationError } from 'nestjs-serialized';
import { advisoryLockKey } from 'nestjs-serialized/providers/postgres/advisory-key.hash';
import request from 'supertest';
import { TEST_DATABASE_URL } from '../support/services';
import { waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { createTransactionApp, runOf, type AdapterName } from './support/transaction-app';

/**
 * Transaction mode (docs/transactions.md) against real PostgreSQL, through each of two
 * adapters of @nestjs-cls/transactional: the lock is taken inside the app's
 * transaction, and COMMIT is its release.
 */
describe.each<AdapterName>(['typeorm', 'drizzle'])('transaction mode through %s', (adapter) => {
  let pg: PgInspector;
  // Holds a key from outside the app, in a transaction (pg_stat_activity stays frozen inside one: pg looks).
  let holder: PgInspector;
  let app: INestApplication;
  let pool: () => { total: number; idle: number; waiting: number };
  let endListeners: () => number;
  let table: string;
  let keyPrefix: string;
  let appName: string;
  let url: string;

  beforeAll(async () => {
    pg = await PgInspector.connect();
    holder = await PgInspector.connect();
    keyPrefix = uniquePrefix(`tx-${adapter}`);
    appName = keyPrefix;
    table = `tx_rewards_${process.pid}_${adapter}`;
    await pg.query(`DROP TABLE IF EXISTS ${table}`);
    await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
    const databaseUrl = `${TEST_DATABASE_URL}?application_name=${appName}`;
    ({ app, pool, endListeners } = await createTransactionApp({
      adapter,
      databaseUrl,
      keyPrefix,
      table,
      poolSize: 3,
      waitTimeoutMs: 30_000,
    }));
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app?.close();
    await pg.query(`DROP TABLE IF EXISTS ${table}`);
    await pg.close();
    await holder.close();
  });

  const claims = async (userId: string) =>
    Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE user_id = $1`, [userId]))[0].n);
  const idleInTransaction = async () =>
    Number(
      (
        await pg.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'`,
          [appName],
        )
      )[0].n,
    );

  it('20 duplicates: the naive twin claims more than once, the serialized handler exactly once', async () => {
    const server = url;
    // Every connection of the pool open first: the twin's race must not depend on how fast a busy host connects.
    await Promise.all(Array.from({ length: 3 }, (_, i) => request(server).post(`/naive/warm-${i}`)));
    const naive = await Promise.all(Array.from({ length: 20 }, () => request(server).post('/naive/n1')));
    expect(naive.every((r) => r.status === 201)).toBe(true);
    expect(await claims('n1')).toBeGreaterThan(1);
    const responses = await Promise.all(Array.from({ length: 20 }, () => request(server).post('/serialized/s1')));
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(responses.filter((r) => r.body.claimed)).toHaveLength(1);
    expect(await claims('s1')).toBe(1);
  });

  it('a @Serialized service method and lockService.run({ transaction: true }) serialize the same key', async () => {
    const server = url;
    await Promise.all([
      ...Array.from({ length: 8 }, () => request(server).post('/service/s2')),
      ...Array.from({ length: 8 }, () => request(server).get('/run/s2')),
      ...Array.from({ length: 8 }, () => request(server).post('/serialized/s2')),
    ]);
    expect(await claims('s2')).toBe(1);
  });

  it('a pool of 3 and 30 duplicates: one connection per key waits in the server, an unrelated query answers at once', async () => {
    const server = url;
    const burst = Promise.all(Array.from({ length: 30 }, () => request(server).post('/hold/b1?ms=20')));
    await new Promise((resolve) => setTimeout(resolve, 150));
    const pings: number[] = [];
    const used: number[] = [];
    for (let i = 0; i < 5; i++) {
      const ping = await request(server).get('/ping');
      pings.push(ping.body.ms);
      used.push(ping.body.pool.total - ping.body.pool.idle);
    }
    const waitingInServer = await pg.advisoryLocks(appName, false);
    const responses = await burst;
    expect(responses.every((r) => r.status === 201)).toBe(true);
    expect(Math.max(...pings)).toBeLessThan(200);
    expect(Math.max(...used)).toBeLessThanOrEqual(2); // the holder's transaction, and the ping itself
    expect(waitingInServer).toBe(0); // one process: its waiters queue in process, not in the server
    const tokens = responses.map((r) => BigInt(r.body.token));
    expect(new Set(tokens.map(String)).size).toBe(30);
    expect(pool().waiting).toBe(0);
  });

  it("mode: 'reject' answers 429 while the key is held; waitTimeoutMs is enforced by the server (429), rolled back, no connection idle in transaction", async () => {
    const server = url;
    // Held by another session outside this process: the app's waiter is the one waiting in the server.
    const key = advisoryLockKey(keyPrefix, 'reward:r1');
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
    try {
      const rejected = await request(server).post('/reject/r1');
      expect(rejected.status).toBe(429);
      const started = Date.now();
      const timedOut = await request(server).post('/short/r1');
      expect(timedOut.status).toBe(429);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await holder.query('COMMIT');
    }
    expect(await claims('r1')).toBe(0);
    expect(await idleInTransaction()).toBe(0);
    // The key is free again for the app.
    expect((await request(server).post('/reject/r1')).status).toBe(201);
  });

  it('inspect lists the transaction holder of this process with its token, and counts its waiters in the server and in line', async () => {
    const server = url;
    const locks = app.get(LockService);
    const key = advisoryLockKey(keyPrefix, 'reward:i1');
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
    let first: Promise<request.Response>;
    let second: Promise<request.Response>;
    try {
      // Behind another session: one caller waits in the server, the next in this process's line.
      first = request(server)
        .post('/hold/i1?ms=400')
        .then((r) => r);
      await waitFor(async () => (await locks.inspect('reward:i1')).waitingHere === 1, 5000, 'one waiter');
      second = request(server)
        .post('/hold/i1?ms=0')
        .then((r) => r);
      await waitFor(async () => (await locks.inspect('reward:i1')).waitingHere === 2, 5000, 'two waiters');
      expect(await locks.inspect('reward:i1')).toEqual({ key: 'reward:i1', holders: [], waiting: 2, waitingHere: 2 });
    } finally {
      await holder.query('COMMIT');
    }
    await waitFor(async () => (await locks.inspect('reward:i1')).holders.length === 1, 5000, 'the holder here');
    const whileHeld = await locks.inspect('reward:i1');
    expect(whileHeld).toEqual({
      key: 'reward:i1',
      holders: [{ here: true, shared: false, fencingToken: expect.any(BigInt), heldForMs: expect.any(Number) }],
      waiting: 1,
      waitingHere: 1,
    });
    const [held, next] = await Promise.all([first!, second!]);
    // The holder listed is the first request's transaction, by its token.
    expect(whileHeld.holders[0].fencingToken).toBe(BigInt(held.body.token));
    expect(BigInt(next.body.token) > BigInt(held.body.token)).toBe(true);
    expect(await locks.inspect('reward:i1')).toEqual({ key: 'reward:i1', holders: [], waiting: 0, waitingHere: 0 });
  });

  it("the section's own error passes through unchanged after the rollback", async () => {
    const response = await request(url).post('/fail/f1');
    expect(response.status).toBe(418);
    expect(response.body).toEqual({ teapot: true });
    expect(await claims('f1')).toBe(0);
  });

  it('a connection lost while waiting in the server is a 503', async () => {
    const key = advisoryLockKey(keyPrefix, 'reward:w1');
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
    try {
      const pending = request(url).post('/serialized/w1');
      const done = pending.then((r) => r);
      let waiter: number | undefined;
      await waitFor(async () => {
        const rows = await pg.query<{ pid: number }>(
          `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = $1`,
          [appName],
        );
        waiter = rows[0]?.pid;
        return waiter !== undefined;
      });
      expect(await pg.terminate(waiter!, appName)).toBe(true);
      const response = await done;
      expect(response.status).toBe(503);
    } finally {
      await holder.query('COMMIT');
    }
    expect(await claims('w1')).toBe(0);
  });

  it('a caller that gives up while waiting in the server: its statement is cancelled, rolled back, and its connection serves the next calls', async () => {
    const locks = app.get(LockService);
    const run = runOf(adapter, app.get(TransactionHost));
    const key = advisoryLockKey(keyPrefix, 'gives-up');
    const listenersBefore = endListeners();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [key]);
    try {
      // Twelve calls over a pool of 3: a listener left on the connection per call would pile up.
      for (let i = 0; i < 12; i++) {
        const controller = new AbortController();
        const gone = new Error(`client ${i} gone`);
        const call = locks.run('gives-up', () => 'ran', { transaction: true, signal: controller.signal }).catch((e: unknown) => e);
        await waitFor(async () => (await pg.advisoryLocks(appName, false)) === 1, 5000, 'the wait in the server');
        const started = Date.now();
        controller.abort(gone);
        expect(await call).toBe(gone);
        expect(Date.now() - started).toBeLessThan(5000);
      }
      expect(await pg.advisoryLocks(appName, false)).toBe(0);
      expect(await idleInTransaction()).toBe(0);
      // The connections that were cancelled run the next statements as usual.
      const answers = await Promise.all(
        Array.from({ length: 3 }, () => locks.run('other-key', () => run('SELECT 1 AS one'), { transaction: true })),
      );
      expect(answers.map((rows) => Number(rows[0].one))).toEqual([1, 1, 1]);
    } finally {
      await holder.query('COMMIT');
    }
    expect(endListeners()).toBe(listenersBefore);
    await expect(locks.run('gives-up', () => 'ran', { transaction: true })).resolves.toBe('ran');
  });

  it('joins an active READ COMMITTED transaction (held until it ends) and refuses a REPEATABLE READ one', async () => {
    const locks = app.get(LockService);
    const txHost = app.get(TransactionHost);
    const run = runOf(adapter, txHost);
    const key = advisoryLockKey(keyPrefix, 'joined');
    let heldAfterSection = -1;
    await txHost.withTransaction(async () => {
      await run('SELECT 1');
      await locks.run('joined', () => run('SELECT 1'), { transaction: true });
      const rows = await pg.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid::bigint = (($1::bigint >> 32) & 4294967295) AND objid::bigint = ($1::bigint & 4294967295)`,
        [key],
      );
      heldAfterSection = Number(rows[0].n);
    });
    expect(heldAfterSection).toBe(1);
    const repeatable = adapter === 'typeorm' ? { isolationLevel: 'REPEATABLE READ' } : { isolationLevel: 'repeatable read' };
    await expect(
      txHost.withTransaction(repeatable as never, () => locks.run('joined', () => run('SELECT 1'), { transaction: true })),
    ).rejects.toBeInstanceOf(TransactionIsolationError);
  });

  it("a transaction the library begins is READ COMMITTED, whatever the adapter's default", async () => {
    const locks = app.get(LockService);
    const run = runOf(adapter, app.get(TransactionHost));
    const isolation = await locks.run('iso', () => run("SELECT current_setting('transaction_isolation') AS i"), { transaction: true });
    expect(isolation[0].i).toBe('read committed');
  });

  {
    it("the lock's signal aborts when the transaction's connection is terminated while held", async () => {
      const locks = app.get(LockService);
      const run = runOf(adapter, app.get(TransactionHost));
      let aborted = false;
      const outcome = locks
        .run(
          'lost',
          async (lock) => {
            const [row] = await run('SELECT pg_backend_pid() AS pid');
            await pg.terminate(Number(row.pid), appName);
            await waitFor(() => lock.signal.aborted, 5000);
            aborted = lock.signal.aborted;
          },
          { transaction: true },
        )
        .then(
          () => 'resolved',
          () => 'rejected',
        );
      await outcome;
      expect(aborted).toBe(true);
    });
  }
});

describe('transaction mode with the postgres driver: inspect', () => {
  let pg: PgInspector;
  let app: INestApplication;
  let keyPrefix: string;
  let table: string;

  beforeAll(async () => {
    pg = await PgInspector.connect();
    keyPrefix = uniquePrefix('tx-inspect');
    table = `tx_inspect_${process.pid}`;
    await pg.query(`DROP TABLE IF EXISTS ${table}`);
    await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
    ({ app } = await createTransactionApp({
      adapter: 'typeorm',
      databaseUrl: `${TEST_DATABASE_URL}?application_name=${keyPrefix}`,
      keyPrefix,
      table,
      driver: 'postgres',
    }));
  });
  afterAll(async () => {
    await app?.close();
    await pg.query(`DROP TABLE IF EXISTS ${table}`);
    await pg.close();
  });

  it("lists this process's transaction once, as its own (not as another session's), and another session's hold of the key as another's", async () => {
    const locks = app.get(LockService);
    const run = runOf('typeorm', app.get(TransactionHost));
    const seen = await locks.run(
      'inspect',
      async (lock) => {
        const [row] = await run('SELECT pg_backend_pid() AS pid');
        return { info: await locks.inspect('inspect'), token: lock.fencingToken, pid: Number(row.pid) };
      },
      { transaction: true },
    );
    expect(seen.info).toEqual({
      key: 'inspect',
      holders: [{ here: true, shared: false, fencingToken: seen.token, heldForMs: expect.any(Number) }],
      waiting: 0,
      waitingHere: 0,
    });

    // Held by a session of no provider here: PostgreSQL tells who.
    await pg.query('BEGIN');
    try {
      await pg.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryLockKey(keyPrefix, 'inspect')]);
      const [{ pid }] = await pg.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(await locks.inspect('inspect')).toEqual({
        key: 'inspect',
        holders: [{ here: false, instance: `nestjs-serialized-test-inspector#${pid}`, shared: false }],
        waiting: 0,
        waitingHere: 0,
      });
    } finally {
      await pg.query('COMMIT');
    }
    expect(await locks.inspect('inspect')).toEqual({ key: 'inspect', holders: [], waiting: 0, waitingHere: 0 });
  });
});
