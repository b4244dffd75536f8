import type { INestApplication } from '@nestjs/common';
import { advisoryLockKey } from 'nestjs-serialized/providers/postgres/advisory-key.hash';
import request from 'supertest';
import { TEST_DATABASE_URL } from '../support/services';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { createTransactionApp } from './support/transaction-app';

/**
 * Key sets in transaction mode through the app's TypeORM: both accounts
 * of a transfer locked in the app's transaction, in canonical order, all or none.
 */
describe('transaction mode with a key set (typeorm)', () => {
  let pg: PgInspector;
  // Another session: holds keys from outside the app, and tells whether a key is free.
  let other: PgInspector;
  let app: INestApplication;
  let keyPrefix: string;
  let table: string;
  let accounts: string;
  let url: string;

  beforeAll(async () => {
    pg = await PgInspector.connect();
    other = await PgInspector.connect();
    keyPrefix = uniquePrefix('tx-sets');
    table = `tx_sets_rewards_${process.pid}`;
    accounts = `tx_sets_accounts_${process.pid}`;
    await pg.query(`DROP TABLE IF EXISTS ${table}, ${accounts}`);
    await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
    await pg.query(`CREATE TABLE ${accounts} (id text PRIMARY KEY, balance int NOT NULL)`);
    ({ app } = await createTransactionApp({
      adapter: 'typeorm',
      databaseUrl: TEST_DATABASE_URL,
      keyPrefix,
      table,
      accounts,
      poolSize: 6,
      waitTimeoutMs: 20_000,
    }));
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  afterAll(async () => {
    await app?.close();
    await pg.query(`DROP TABLE IF EXISTS ${table}, ${accounts}`);
    await pg.close();
    await other.close();
  });

  const open = async (ids: string[]) => {
    for (const id of ids)
      await pg.query(`INSERT INTO ${accounts} (id, balance) VALUES ($1, 1000) ON CONFLICT (id) DO UPDATE SET balance = 1000`, [id]);
  };
  const total = async (ids: string[]) =>
    Number((await pg.query<{ n: string }>(`SELECT sum(balance) AS n FROM ${accounts} WHERE id = ANY($1)`, [ids]))[0].n);
  const lockKey = (id: string) => advisoryLockKey(keyPrefix, `account:${id}`);
  /** Whether another session can take the transaction lock of account `id` now. */
  const freeForOthers = async (id: string) => {
    await other.query('BEGIN');
    try {
      const [row] = await other.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS ok', [lockKey(id)]);
      return row.ok;
    } finally {
      await other.query('ROLLBACK');
    }
  };

  it('random transfers between 6 accounts in both directions, by the decorator and by run(): money conserved, no deadlock', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `t${i}`);
    await open(ids);
    const calls = Array.from({ length: 40 }, (_, i) => {
      const from = ids[Math.floor(Math.random() * 6)];
      const to = ids[(ids.indexOf(from) + 1 + Math.floor(Math.random() * 5)) % 6];
      return (
        i % 3 ? request(url).post(`/transfer/${from}/${to}?amount=${1 + (i % 5)}`) : request(url).get(`/run-transfer/${from}/${to}`)
      ).then((r) => r);
    });
    const responses = await Promise.all(calls);
    expect(responses.map((r) => r.status).filter((status) => status >= 300)).toEqual([]);
    expect(await total(ids)).toBe(6000);
    // Each lock of the set drew its own token, in the order of the keys.
    const first = responses.find((r) => r.status === 201)!.body;
    expect(first.keys).toHaveLength(2);
    expect(new Set(first.tokens).size).toBe(2);
  });

  it('the locks are taken in canonical order in the transaction: a set waits behind a holder of either account', async () => {
    await open(['ca', 'cb']);
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey('ca')]);
    const transfer = request(url)
      .post('/transfer/cb/ca')
      .then((r) => r);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // 'ca' sorts first: the set waits for it and has taken nothing yet, so 'cb' is free.
    const [cb] = await pg.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS ok', [lockKey('cb')]);
    expect(cb.ok).toBe(true);
    await other.query('COMMIT');
    expect((await transfer).status).toBe(201);
  });

  it('reject mode: a busy account → 429, and the other account is not held after it', async () => {
    await open(['ra', 'rb']);
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey('rb')]);
    try {
      const refused = await request(url).post('/transfer-reject/ra/rb');
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 429, code: 'LOCK_BUSY' });
    } finally {
      await other.query('COMMIT');
    }
    expect(await freeForOthers('ra')).toBe(true);
    expect(await total(['ra', 'rb'])).toBe(2000);
  });

  it('a timeout bounds the whole set (429), and no account stays held', async () => {
    await open(['wa', 'wb']);
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey('wb')]);
    let status: number;
    const started = Date.now();
    try {
      status = (await request(url).post('/transfer-short/wa/wb')).status;
    } finally {
      await other.query('COMMIT');
    }
    expect(status).toBe(429);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await freeForOthers('wa')).toBe(true);
  });

  it('in a transaction the app began (joined), a failed set leaves no advisory lock held by it (savepoint)', async () => {
    await other.query('BEGIN');
    await other.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey('jb')]);
    try {
      const response = await request(url).post('/joined-reject/ja/jb');
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ error: 'LockBusyError', advisoryLocksHeld: 0 });
    } finally {
      await other.query('COMMIT');
    }
  });
});
