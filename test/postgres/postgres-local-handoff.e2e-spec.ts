import { LockLostError, PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { WorkerProcess } from '../support/processes';
import { uniqueId, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';

const WORKER = 'test/postgres/workers/local-handoff.worker.ts';
/** The provider's documented default bound on local hand-offs in a row. */
const MAX_LOCAL_HANDOFFS = 32;

type LogRow = {
  token: string;
  counter: number;
  proc: string;
  at: Date;
};

/**
 * Local hand-off (lock cohorting) on PostgreSQL across real OS processes: a holder
 * passes its key to the next caller of its own process without an unlock/lock
 * round trip, bounded so that no process starves; exclusion, fencing order and
 * crash takeover hold throughout.
 */
describe('PostgreSQL local hand-off across OS processes', () => {
  let pg: PgInspector;
  const workers: WorkerProcess[] = [];
  const providers: PostgresLockProvider[] = [];
  let table: string;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  beforeEach(async () => {
    table = `nsz_cohort_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await pg.query(`CREATE TABLE ${table} (id int PRIMARY KEY, counter int NOT NULL, inside int NOT NULL, last_token bigint NOT NULL)`);
    await pg.query(
      `CREATE TABLE ${table}_log (token bigint PRIMARY KEY, counter int NOT NULL, proc text NOT NULL, at timestamptz NOT NULL)`,
    );
    await pg.query(`INSERT INTO ${table} VALUES (1, 0, 0, 0)`);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await pg.query(`DROP TABLE IF EXISTS ${table}, ${table}_log`);
  });
  afterAll(async () => {
    await pg.close();
  });

  const start = (name: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, WORKER, { DATABASE_URL: TEST_DATABASE_URL, TABLE: table, NAME: name, ...env });
    workers.push(worker);
    return worker;
  };

  it('4 processes × 25 waiters on one key: no overlap, tokens strictly increase across local and server hand-offs, no process starved', async () => {
    const keyPrefix = uniquePrefix('cohort');
    const perWaiter = 8;
    const procs = [0, 1, 2, 3].map((i) =>
      start(`p${i}`, { KEY_PREFIX: keyPrefix, APP_NAME: `${keyPrefix}:${i}`, KEY: 'hot', WAITERS: '25', PER_WAITER: String(perWaiter) }),
    );
    await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
    procs.forEach((p) => p.send({ type: 'go' }));
    const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
    for (const result of results)
      expect(result).toMatchObject({ type: 'done', sections: 25 * perWaiter, overlaps: 0, fencingViolations: 0 });

    const total = 4 * 25 * perWaiter;
    const [row] = await pg.query<{ counter: number; inside: number }>(`SELECT counter, inside FROM ${table} WHERE id = 1`);
    expect(row).toEqual({ counter: total, inside: 0 });
    const log = await pg.query<LogRow>(`SELECT token, counter, proc, at FROM ${table}_log ORDER BY counter`);
    expect(log.map((r) => r.counter)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    let fencingViolations = 0;
    let localHandoffs = 0;
    let longestRun = 1;
    let run = 1;
    for (let i = 1; i < log.length; i++) {
      const [before, after] = [BigInt(log[i - 1].token), BigInt(log[i].token)];
      if (after <= before) fencingViolations++;
      const same = log[i].proc === log[i - 1].proc;
      if (same && after === before + 1n) localHandoffs++;
      run = same ? run + 1 : 1;
      longestRun = Math.max(longestRun, run);
    }
    // The longest any process went without a section while others held the key.
    const lastSeen = new Map<string, number>();
    let longestGapMs = 0;
    let longestGapSections = 0;
    log.forEach((entry, i) => {
      const seen = lastSeen.get(entry.proc);
      if (seen !== undefined) {
        longestGapSections = Math.max(longestGapSections, i - seen - 1);
        longestGapMs = Math.max(longestGapMs, entry.at.getTime() - log[seen].at.getTime());
      }
      lastSeen.set(entry.proc, i);
    });
    const longestWaitMs = Math.max(...results.map((r) => r.longestWaitMs as number));
    console.log(
      `cohort 4×25: ${total} sections, overlaps 0, fencing violations ${fencingViolations}, local hand-offs ${localHandoffs} ` +
        `(${((100 * localHandoffs) / (total - 1)).toFixed(1)} %), longest run of one process ${longestRun}, ` +
        `longest a process went without the key ${longestGapSections} sections / ${longestGapMs} ms, longest single wait ${longestWaitMs.toFixed(1)} ms`,
    );
    expect(fencingViolations).toBe(0);
    // Cohorting was on: most hand-offs stayed inside a process...
    expect(localHandoffs).toBeGreaterThan(total / 2);
    // ...but bounded: no process kept the key for more than a few server grants in a row
    // (without the bound one process would run all its 200 sections at once).
    expect(longestRun).toBeLessThanOrEqual(3 * (MAX_LOCAL_HANDOFFS + 1));
    expect(longestGapSections).toBeLessThan(total / 2);
  }, 200_000);

  describe('in one process', () => {
    const make = (): PostgresLockProvider => {
      const keyPrefix = uniquePrefix('cohort-one');
      const made = new PostgresLockProvider({
        connectionString: TEST_DATABASE_URL,
        keyPrefix,
        applicationName: `${keyPrefix}:a`,
        lockPoolSize: 2,
        handoff: 'cohort',
      });
      providers.push(made);
      return made;
    };

    it('hands the lock to the next caller without a statement, with the next token; the last release unlocks', async () => {
      const provider = make();
      const key = uniqueId('k');
      const first = await provider.acquire(key);
      const second = provider.acquire(key);
      const third = provider.acquire(key);
      await first.release();
      const b = await second;
      expect(b.fencingToken).toBe(first.fencingToken + 1n);
      // Still one advisory lock, held by the same session all along.
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(1);
      await b.release();
      const c = await third;
      expect(c.fencingToken).toBe(first.fencingToken + 2n);
      await c.release();
      expect(await pg.advisoryLocks(provider.applicationName)).toBe(0);
      expect(provider.activeKeys).toBe(0);
    });

    it('a caller aborted in the tick the lock was handed to it passes it on, or unlocks when nobody else waits', async () => {
      const provider = make();
      const key = uniqueId('k');
      const first = await provider.acquire(key);
      const gone = new AbortController();
      const aborted = provider.acquire(key, { signal: gone.signal });
      const next = provider.acquire(key);
      void first.release();
      gone.abort(new Error('client left'));
      await expect(aborted).rejects.toThrow('client left');
      const lock = await next;
      // Handed on locally, on the same session: the aborted caller's token (first + 1) went with it, unused — skipped, never reused.
      expect(lock.fencingToken).toBe(first.fencingToken + 2n);

      const alone = new AbortController();
      const last = provider.acquire(key, { signal: alone.signal });
      void lock.release();
      alone.abort(new Error('client left'));
      await expect(last).rejects.toThrow('client left');
      await waitFor(() => provider.activeKeys === 0, 5000, 'the key is idle');
      expect(await pg.advisoryLocks(provider.applicationName)).toBe(0);
    });

    it.each([
      ['by default', {}, {}],
      ['on the acquisition, the provider cohort', { handoff: 'cohort' as const }, { handoff: 'strict' as const }],
    ])(
      'strict (%s): hands off locally while no other session waits in the server, and to that session once one does',
      async (_, providerOptions, call) => {
        const keyPrefix = uniquePrefix('cohort-strict');
        const strict = new PostgresLockProvider({
          connectionString: TEST_DATABASE_URL,
          keyPrefix,
          applicationName: `${keyPrefix}:a`,
          lockPoolSize: 2,
          ...providerOptions,
        });
        const other = new PostgresLockProvider({
          connectionString: TEST_DATABASE_URL,
          keyPrefix,
          applicationName: `${keyPrefix}:b`,
          lockPoolSize: 2,
        });
        providers.push(strict, other);
        const key = uniqueId('k');
        const first = await strict.acquire(key, call);
        const second = strict.acquire(key, call);
        await first.release();
        const local = await second;
        expect(local.fencingToken).toBe(first.fencingToken + 1n);

        const remote = other.acquire(key);
        await waitFor(
          async () => (await pg.advisoryLocks(other.applicationName, false)) === 1,
          10_000,
          'the other process waits in PostgreSQL',
        );
        const third = strict.acquire(key, call);
        await local.release();
        // The waiting session got it (a server grant: a new block), not the local caller.
        const theirs = await remote;
        expect(theirs.fencingToken >= local.fencingToken + 1024n - 1n).toBe(true);
        await theirs.release();
        const mine = await third;
        expect(mine.fencingToken > theirs.fencingToken).toBe(true);
        await mine.release();
      },
    );

    it('a holder that got the key by a local hand-off learns that the session was lost (signal aborts)', async () => {
      const provider = make();
      const key = uniqueId('k');
      const first = await provider.acquire(key);
      const second = provider.acquire(key);
      await first.release();
      const handed = await second;
      expect(handed.fencingToken).toBe(first.fencingToken + 1n);
      const [pid] = await pg.pids(provider.applicationName);
      expect(await pg.terminate(pid, provider.applicationName)).toBe(true);
      await waitFor(() => handed.signal.aborted, 10_000, 'the handed lock is lost');
      expect(handed.signal.reason).toBeInstanceOf(LockLostError);
      await handed.release();
    });
  });

  it('a process killed while handing off locally: another process gets the key once its session ends, with a larger token', async () => {
    const keyPrefix = uniquePrefix('cohort-kill');
    const app = `${keyPrefix}:victim`;
    const victim = start('victim', {
      KEY_PREFIX: keyPrefix,
      APP_NAME: app,
      KEY: 'hot',
      WAITERS: '25',
      PER_WAITER: '100',
      HANG_AFTER: '20',
    });
    await victim.waitForType('ready', 60_000);
    victim.send({ type: 'go' });
    const hanging = await victim.waitForType('hanging', 60_000);
    // The 20th section of a process alone on the key came by a local hand-off.
    expect(hanging.local).toBe(true);
    const [victimPid] = await pg.pids(app);

    const waiter = new PostgresLockProvider({
      connectionString: TEST_DATABASE_URL,
      keyPrefix,
      applicationName: `${keyPrefix}:waiter`,
      lockPoolSize: 2,
    });
    providers.push(waiter);
    let acquired = false;
    const acquiring = waiter.acquire('hot', { waitTimeoutMs: 30_000 }).then((lock) => {
      acquired = true;
      return lock;
    });
    await waitFor(
      async () => (await pg.advisoryLocks(`${keyPrefix}:waiter`, false)) === 1,
      10_000,
      'the other process queues in PostgreSQL',
    );
    expect(acquired).toBe(false);

    victim.kill('SIGKILL');
    const lock = await acquiring;
    expect(await pg.alive(victimPid)).toBe(false);
    expect(lock.fencingToken > BigInt(hanging.token as string)).toBe(true);
    // Larger than every token of the victim's block, too.
    const [{ max }] = await pg.query<{ max: string }>(`SELECT max(token)::text AS max FROM ${table}_log`);
    expect(lock.fencingToken > BigInt(max)).toBe(true);
    await lock.release();
  }, 120_000);
});
