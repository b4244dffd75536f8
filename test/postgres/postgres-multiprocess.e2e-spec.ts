import { LockLostError, PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { WorkerProcess } from '../support/processes';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';

const WORKERS = 'test/postgres/workers';

/**
 * The PostgreSQL provider across real OS processes sharing one database: the
 * guarantees that only matter when several processes (app instances) compete.
 */
describe('PostgresLockProvider across OS processes', () => {
  let pg: PgInspector;
  const workers: WorkerProcess[] = [];
  const providers: PostgresLockProvider[] = [];
  const start = (name: string, file: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, `${WORKERS}/${file}`, { DATABASE_URL: TEST_DATABASE_URL, ...env });
    workers.push(worker);
    return worker;
  };
  const provider = (keyPrefix: string, applicationName: string): PostgresLockProvider => {
    const made = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix, applicationName, lockPoolSize: 2 });
    providers.push(made);
    return made;
  };

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await pg.close();
  });

  it('4 processes × 250 critical sections on one key: exact counter, no overlap, increasing fencing tokens', async () => {
    const table = `nsz_counter_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await pg.query(`CREATE TABLE ${table} (id int PRIMARY KEY, counter int NOT NULL, inside int NOT NULL, last_token bigint NOT NULL)`);
    await pg.query(`CREATE TABLE ${table}_log (token bigint PRIMARY KEY, counter int NOT NULL)`);
    await pg.query(`INSERT INTO ${table} VALUES (1, 0, 0, 0)`);
    try {
      const keyPrefix = uniquePrefix('mp');
      const procs = [0, 1, 2, 3].map((i) =>
        start(`counter-${i}`, 'counter.worker.ts', {
          KEY_PREFIX: keyPrefix,
          APP_NAME: `${keyPrefix}:${i}`,
          KEY: 'account-1',
          ITERATIONS: '250',
          TABLE: table,
        }),
      );
      await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
      procs.forEach((p) => p.send({ type: 'go' }));
      const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
      for (const result of results) expect(result).toMatchObject({ type: 'done', overlaps: 0, fencingViolations: 0 });

      const [row] = await pg.query<{ counter: number; inside: number }>(`SELECT counter, inside FROM ${table} WHERE id = 1`);
      expect(row).toEqual({ counter: 1000, inside: 0 });
      // Every process took its turns (no starvation) and saw its own tokens increase.
      for (const result of results) {
        const tokens = (result.tokens as string[]).map(BigInt);
        expect(tokens).toHaveLength(250);
        for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
      }
      // In the global order of the writes, tokens strictly increase.
      const log = await pg.query<{ token: string; counter: number }>(`SELECT token, counter FROM ${table}_log ORDER BY counter`);
      expect(log.map((r) => r.counter)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
      for (let i = 1; i < log.length; i++) expect(BigInt(log[i].token) > BigInt(log[i - 1].token)).toBe(true);
    } finally {
      await pg.query(`DROP TABLE IF EXISTS ${table}, ${table}_log`);
    }
  }, 200_000);

  describe('a holder in another process', () => {
    // Both holder processes start together: the tests wait for one start-up, not two.
    const holders: Record<'killed' | 'terminated', { worker: WorkerProcess; keyPrefix: string; key: string; app: string }> = {} as never;
    beforeAll(() => {
      for (const name of ['killed', 'terminated'] as const) {
        const keyPrefix = uniquePrefix(name.slice(0, 4));
        const key = uniqueId('k');
        const app = `${keyPrefix}:holder`;
        const worker = WorkerProcess.start(name, `${WORKERS}/holder.worker.ts`, {
          DATABASE_URL: TEST_DATABASE_URL,
          KEY_PREFIX: keyPrefix,
          APP_NAME: app,
          KEY: key,
        });
        holders[name] = { worker, keyPrefix, key, app };
      }
    });
    afterAll(async () => {
      await Promise.all(Object.values(holders).map((h) => h.worker.stop()));
    });

    it("frees a SIGKILLed holder's key as soon as its session ends", async () => {
      const { worker: holder, keyPrefix, key, app: holderApp } = holders.killed;
      const held = await holder.waitForType('held', 60_000);
      const [holderPid] = await pg.pids(holderApp);
      expect(holderPid).toBeDefined();

      const waiter = provider(keyPrefix, `${keyPrefix}:waiter`);
      let acquiredAt = 0;
      const acquiring = waiter.acquire(key, { waitTimeoutMs: 30_000 }).then((lock) => {
        acquiredAt = Date.now();
        return lock;
      });
      await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:waiter`, false)) === 1, 10_000, 'the waiter queues in PostgreSQL');
      await sleep(200);
      expect(acquiredAt).toBe(0);

      const killedAt = Date.now();
      holder.kill('SIGKILL');
      const lock = await acquiring;
      // The key passed on because the session ended, not because a lease ran out.
      expect(await pg.alive(holderPid)).toBe(false);
      expect(acquiredAt - killedAt).toBeLessThan(5000);
      expect(lock.fencingToken > BigInt(held.token as string)).toBe(true);
      await lock.release();
    }, 90_000);

    it("aborts the holder's signal with LockLostError when its backend is terminated, and its pool recovers", async () => {
      const { worker: holder, app: holderApp } = holders.terminated;
      const held = await holder.waitForType('held', 60_000);
      const pids = await pg.pids(holderApp);
      expect(pids).toHaveLength(1);

      const terminatedAt = Date.now();
      expect(await pg.terminate(pids[0], holderApp)).toBe(true);
      const lost = await holder.waitForType('lost', 10_000);
      expect(lost.name).toBe(LockLostError.name);
      expect(lost.message).toMatch(/session ended/);
      expect((lost.at as number) - terminatedAt).toBeLessThan(2000);

      const again = await holder.waitForType('reacquired', 30_000);
      expect(BigInt(again.token as string) > BigInt(held.token as string)).toBe(true);
      await holder.waitForType('closed', 30_000);
      expect(await pg.sessions(holderApp)).toBe(0);
    }, 90_000);
  });

  it('500 concurrent waiters on one key with a lock pool of 5 all finish; never more than 5 lock sessions', async () => {
    const keyPrefix = uniquePrefix('crowd');
    const crowdApp = `${keyPrefix}:crowd`;
    const crowd = start('crowd', 'crowd.worker.ts', {
      KEY_PREFIX: keyPrefix,
      APP_NAME: crowdApp,
      POOL_SIZE: '5',
      HOT_KEY: 'hot',
      HOT_WAITERS: '500',
      OTHER_KEYS: '30',
      OTHER_WAITERS: '5',
    });
    await crowd.waitForType('ready', 60_000);
    // Another process holds the hot key first, so the crowd's head really waits in PostgreSQL.
    const blocker = provider(keyPrefix, `${keyPrefix}:blocker`);
    const blocking = await blocker.acquire('hot');
    crowd.send({ type: 'go' });

    let maxSessions = 0;
    let samples = 0;
    let done = false;
    const finished = crowd.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000).finally(() => (done = true));
    const sampling = (async () => {
      while (!done) {
        maxSessions = Math.max(maxSessions, await pg.sessions(crowdApp));
        samples++;
        await sleep(10);
      }
    })();
    await crowd.waitForType('started', 30_000);
    await waitFor(async () => (await pg.advisoryLocks(crowdApp, false)) >= 1, 10_000, 'the crowd waits in PostgreSQL');
    // Only one of the 500 waits in the server for the hot key.
    expect(
      await pg.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = $1`,
        [crowdApp],
      ),
    ).toEqual([{ n: '1' }]);
    await sleep(200);
    await blocking.release();

    const result = await finished;
    await sampling;
    expect(result).toMatchObject({ type: 'done', completed: 500 + 30 * 5, failed: 0, maxInside: 1 });
    expect(samples).toBeGreaterThan(5);
    expect(maxSessions).toBeGreaterThanOrEqual(1);
    expect(maxSessions).toBeLessThanOrEqual(5);
    expect(result.connections as number).toBeLessThanOrEqual(5);
  }, 200_000);
});
