import { Client } from 'pg';
import { TEST_DATABASE_URL, TEST_MYSQL_URL, TEST_REDIS_URL } from '../support/services';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { uniqueId } from '../support/timing';

const WORKER = 'test/semantics/workers/transfer.worker.ts';
const WAIT_MS = 20_000;

/**
 * Several keys at once across real OS processes (docs/semantics.md, *Several keys at once*): transfers between
 * accounts, each holding both accounts, from processes with their own provider on
 * one Redis, one PostgreSQL or one MariaDB. Balances live in a PostgreSQL table whose `inside`
 * column shows any two sections in one account at once.
 */
describe.each([['redis'], ['postgres'], ['mysql']])('key sets across OS processes (%s driver)', (driver) => {
  let pg: Client;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    pg = new Client({ connectionString: TEST_DATABASE_URL });
    await pg.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  });
  afterAll(async () => {
    await pg.end();
  });

  /** A table of `accounts`, each with `balance`; runs `env` in each process; returns their reports and the table. */
  async function runTransfers(accounts: string[], processes: Record<string, string>[], waitMs = WAIT_MS) {
    const table = `nsz_sets_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await pg.query(`CREATE TABLE ${table} (id text PRIMARY KEY, balance int NOT NULL, inside int NOT NULL DEFAULT 0)`);
    try {
      for (const id of accounts) await pg.query(`INSERT INTO ${table} (id, balance) VALUES ($1, 1000)`, [id]);
      const keyPrefix = uniqueId('sets');
      const started = processes.map((env, i) => {
        const worker = WorkerProcess.start(`transfer-${i}`, WORKER, {
          DRIVER: driver,
          DATABASE_URL: TEST_DATABASE_URL,
          REDIS_URL: TEST_REDIS_URL,
          MYSQL_URL: TEST_MYSQL_URL,
          KEY_PREFIX: keyPrefix,
          TABLE: table,
          WAIT_MS: String(waitMs),
          ...env,
        });
        workers.push(worker);
        return worker;
      });
      await Promise.all(started.map((worker) => worker.waitForType('ready', 60_000)));
      started.forEach((worker) => worker.send({ type: 'go' }));
      const reports = await Promise.all(started.map((worker) => worker.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
      const { rows } = await pg.query<{ id: string; balance: number; inside: number }>(
        `SELECT id, balance, inside FROM ${table} ORDER BY id`,
      );
      return {
        reports: reports as (WorkerMessage & { transfers: number; overlaps: number; failures: string[]; maxCallMs: number })[],
        rows,
      };
    } finally {
      await pg.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }

  it('random transfers between 6 accounts from 3 processes, both directions: money conserved, no overlap, no deadlock', async () => {
    const accounts = Array.from({ length: 6 }, (_, i) => `acc-${i}`);
    const env = { ACCOUNTS: accounts.join(','), MODE: 'random', HOW: 'set', ITERATIONS: '60', CONCURRENCY: '3' };
    const { reports, rows } = await runTransfers(accounts, [env, env, env]);
    for (const report of reports) {
      expect(report).toMatchObject({ type: 'done', transfers: 60, overlaps: 0, failures: [] });
      // No call came near its wait budget: nothing waited in a cycle.
      expect(report.maxCallMs).toBeLessThan(WAIT_MS / 2);
    }
    expect(rows.reduce((sum, row) => sum + row.balance, 0)).toBe(6000);
    expect(rows.every((row) => row.inside === 0)).toBe(true);
    // Money really moved (the test would not pass with sections that did nothing).
    expect(rows.some((row) => row.balance !== 1000)).toBe(true);
  }, 200_000);

  it('opposite-order sets hammered from two processes: all finish, no overlap; nested runs in those orders deadlock', async () => {
    const forward = { ACCOUNTS: 'x,y', MODE: 'pair', HOW: 'set', ITERATIONS: '150', CONCURRENCY: '2' };
    const backward = { ...forward, ACCOUNTS: 'y,x' };
    const sets = await runTransfers(['x', 'y'], [forward, backward]);
    for (const report of sets.reports) expect(report).toMatchObject({ type: 'done', transfers: 150, overlaps: 0, failures: [] });
    expect(sets.rows.map((row) => row.balance).reduce((a, b) => a + b)).toBe(2000);

    // The naive way on the same pair: each process nests run(from, run(to)). They wait for each other in a cycle,
    // which only the wait budget (or PostgreSQL's deadlock detector) ends: calls fail.
    const nested = await runTransfers(
      ['x', 'y'],
      [
        { ...forward, HOW: 'nested', ITERATIONS: '8', CONCURRENCY: '1' },
        { ...backward, HOW: 'nested', ITERATIONS: '8', CONCURRENCY: '1' },
      ],
      1000,
    );
    const failed = nested.reports.flatMap((report) => report.failures);
    expect(failed.length).toBeGreaterThan(0);
  }, 200_000);
});
