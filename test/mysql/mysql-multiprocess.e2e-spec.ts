import { LockBackendError, LockLostError, LockService, MysqlLockProvider } from 'nestjs-serialized';
import { TEST_MYSQL_URL } from '../support/services';
import { freeLocalPort } from '../support/local-server';
import { WorkerProcess } from '../support/processes';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { MysqlInspector, uniquePrefix } from './support/mysql-inspect';

const WORKERS = 'test/mysql/workers';

/**
 * The MySQL provider across real OS processes sharing one MariaDB server: the
 * guarantees that only matter when several processes (app instances) compete, and
 * what the server shows afterwards (no named lock left held).
 */
describe('MysqlLockProvider across OS processes', () => {
  let db: MysqlInspector;
  const workers: WorkerProcess[] = [];
  const providers: MysqlLockProvider[] = [];
  const start = (name: string, file: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, `${WORKERS}/${file}`, { MYSQL_URL: TEST_MYSQL_URL, ...env });
    workers.push(worker);
    return worker;
  };
  const provider = (keyPrefix: string): MysqlLockProvider => {
    const made = new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix, lockPoolSize: 2 });
    providers.push(made);
    return made;
  };

  beforeAll(async () => {
    db = await MysqlInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await db.close();
  });

  it('4 processes × 150 critical sections on one key: exact counter, no overlap, increasing fencing tokens, nothing left held', async () => {
    const table = `nsz_counter_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await db.query(
      `CREATE TABLE ${table} (id INT PRIMARY KEY, counter INT NOT NULL, inside INT NOT NULL, last_token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
    );
    await db.query(`CREATE TABLE ${table}_log (token BIGINT UNSIGNED PRIMARY KEY, counter INT NOT NULL) ENGINE=InnoDB`);
    await db.query(`INSERT INTO ${table} VALUES (1, 0, 0, 0)`);
    try {
      const keyPrefix = uniquePrefix('mp');
      const procs = [0, 1, 2, 3].map((i) =>
        start(`counter-${i}`, 'counter.worker.ts', { KEY_PREFIX: keyPrefix, KEY: 'account-1', ITERATIONS: '150', TABLE: table }),
      );
      await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
      procs.forEach((p) => p.send({ type: 'go' }));
      const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
      for (const result of results) expect(result).toMatchObject({ type: 'done', overlaps: 0, fencingViolations: 0 });

      const [row] = await db.query<{ counter: number; inside: number }>(`SELECT counter, inside FROM ${table} WHERE id = 1`);
      expect({ counter: Number(row.counter), inside: Number(row.inside) }).toEqual({ counter: 600, inside: 0 });
      for (const result of results) {
        const tokens = (result.tokens as string[]).map(BigInt);
        expect(tokens).toHaveLength(150);
        for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
      }
      // In the global order of the writes, tokens strictly increase.
      const log = await db.query<{ token: string; counter: number }>(`SELECT token, counter FROM ${table}_log ORDER BY counter`);
      expect(log.map((r) => Number(r.counter))).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
      for (let i = 1; i < log.length; i++) expect(BigInt(log[i].token) > BigInt(log[i - 1].token)).toBe(true);
      // The processes closed their providers: the key's named lock is free on the server.
      expect(await db.holderOf(provider(keyPrefix).lockNameOf('account-1'))).toBeNull();
    } finally {
      await db.query(`DROP TABLE IF EXISTS ${table}, ${table}_log`);
    }
  }, 200_000);

  describe('a holder in another process', () => {
    // Both holder processes start together: the tests wait for one start-up, not two.
    const holders: Record<'killed' | 'sessionKilled', { worker: WorkerProcess; keyPrefix: string; key: string }> = {} as never;
    beforeAll(() => {
      for (const name of ['killed', 'sessionKilled'] as const) {
        const keyPrefix = uniquePrefix(name.slice(0, 4));
        const key = uniqueId('k');
        const worker = WorkerProcess.start(name, `${WORKERS}/holder.worker.ts`, {
          MYSQL_URL: TEST_MYSQL_URL,
          KEY_PREFIX: keyPrefix,
          KEY: key,
        });
        holders[name] = { worker, keyPrefix, key };
      }
    });
    afterAll(async () => {
      await Promise.all(Object.values(holders).map((h) => h.worker.stop()));
    });

    it("frees a SIGKILLed holder's key as soon as its session ends", async () => {
      const { worker: holder, keyPrefix, key } = holders.killed;
      const held = await holder.waitForType('held', 60_000);
      const holderSession = await db.holderOf(held.name as string);
      expect(holderSession).not.toBeNull();

      const waiter = provider(keyPrefix);
      let acquiredAt = 0;
      const acquiring = waiter.acquire(key, { waitTimeoutMs: 30_000 }).then((lock) => {
        acquiredAt = Date.now();
        return lock;
      });
      await waitFor(async () => (await db.waitingFor(held.name as string)) === 1, 10_000, 'the waiter waits in the server');
      await sleep(200);
      expect(acquiredAt).toBe(0);

      const killedAt = Date.now();
      holder.kill('SIGKILL');
      const lock = await acquiring;
      // The key passed on because the session ended.
      expect(await db.alive(holderSession!)).toBe(false);
      expect(acquiredAt - killedAt).toBeLessThan(5000);
      expect(lock.fencingToken > BigInt(held.token as string)).toBe(true);
      await lock.release();
      expect(await db.holderOf(held.name as string)).toBeNull();
    }, 90_000);

    it("aborts the holder's signal with LockLostError when its session is KILLed, frees the key, and its pool recovers", async () => {
      const { worker: holder, keyPrefix, key } = holders.sessionKilled;
      const held = await holder.waitForType('held', 60_000);
      const session = await db.holderOf(held.name as string);
      expect(session).not.toBeNull();

      const killedAt = Date.now();
      await db.kill(session!);
      const lost = await holder.waitForType('lost', 10_000);
      expect(lost.name).toBe(LockLostError.name);
      expect(lost.message).toMatch(/session ended/);
      expect((lost.at as number) - killedAt).toBeLessThan(2000);
      // The key is free for others at once (here: another process, which may come just
      // before or just after the holder's own new acquisition).
      const other = provider(keyPrefix);
      const taken = await other.acquire(key, { waitTimeoutMs: 10_000 });
      const takenAt = Date.now();
      expect(takenAt - killedAt).toBeLessThan(3000);
      expect(taken!.fencingToken > BigInt(held.token as string)).toBe(true);
      await taken!.release();

      const again = await holder.waitForType('reacquired', 30_000);
      // The holder may take the key again (and let it go) before or after this process's
      // try: tokens follow the order of the grants either way.
      const againToken = BigInt(again.token as string);
      expect(againToken > BigInt(held.token as string)).toBe(true);
      expect(againToken).not.toBe(taken!.fencingToken);
      if (againToken < taken!.fencingToken) expect(again.at as number).toBeLessThanOrEqual(takenAt);
      await holder.waitForType('closed', 30_000);
      expect(await db.holderOf(held.name as string)).toBeNull();
    }, 90_000);
  });

  it('fails closed at a dead port: LockBackendError within the connect timeout, and the section never runs', async () => {
    const port = await freeLocalPort();
    const dead = new MysqlLockProvider({
      url: `mysql://user:s3cr3t-pw@127.0.0.1:${port}/test`,
      keyPrefix: uniquePrefix('dead'),
      connectTimeoutMs: 500,
    });
    providers.push(dead);
    let ran = 0;
    const started = Date.now();
    const error = await new LockService(dead).run('k', () => void ran++).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).not.toContain('s3cr3t-pw');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(ran).toBe(0);
    await expect(dead.ping(500)).rejects.toBeInstanceOf(LockBackendError);
  }, 30_000);

  describe('waits in the server', () => {
    it('a sub-second budget ends on time (GET_LOCK counts whole seconds) and leaves no session waiting', async () => {
      const keyPrefix = uniquePrefix('sub');
      const [a, b] = [provider(keyPrefix), provider(keyPrefix)];
      const held = await a.acquire('k');
      const name = a.lockNameOf('k');
      for (const budget of [150, 400, 1300]) {
        const started = performance.now();
        const error = await b.acquire('k', { waitTimeoutMs: budget }).catch((e: unknown) => e);
        const took = performance.now() - started;
        expect((error as Error).name).toBe('LockTimeoutError');
        expect(took).toBeGreaterThanOrEqual(budget - 5);
        expect(took).toBeLessThan(budget + 700);
        // The wait was ended on the server too: no statement of b waits for the key.
        await waitFor(async () => (await db.waitingFor(name)) === 0, 2000, 'the server wait ended');
      }
      expect(await db.holderOf(name)).not.toBeNull();
      await held.release();
      // The key is free: no late grant kept it for a caller who gave up.
      expect(await db.holderOf(name)).toBeNull();
      const next = await b.tryAcquire('k');
      expect(next).not.toBeNull();
      await next!.release();
    }, 30_000);

    it('an aborted wait ends its server wait at once (KILL QUERY), and the key passes to the next caller', async () => {
      const keyPrefix = uniquePrefix('abort');
      const [a, b] = [provider(keyPrefix), provider(keyPrefix)];
      const held = await a.acquire('k');
      const name = a.lockNameOf('k');
      const controller = new AbortController();
      const waiting = b.acquire('k', { signal: controller.signal, waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
      await waitFor(async () => (await db.waitingFor(name)) === 1, 5000, 'b waits in the server');
      const behind = b.acquire('k', { waitTimeoutMs: 10_000 });
      controller.abort(new Error('client went away'));
      expect(((await waiting) as Error).message).toBe('client went away');
      await waitFor(async () => (await db.waitingFor(name)) <= 1, 2000, 'the aborted wait ended on the server');
      await held.release();
      const next = await behind;
      expect(next.fencingToken > held.fencingToken).toBe(true);
      await next.release();
      expect(await db.holderOf(name)).toBeNull();
    }, 30_000);

    it('reports a release the server answers with NULL (the lock was gone) as a loss, never as success', async () => {
      const keyPrefix = uniquePrefix('rel');
      const a = provider(keyPrefix);
      const lock = await a.acquire('k');
      // Someone released the named lock on the holder's session behind the provider's back.
      const session = (lock as unknown as { session: { query(sql: string, values: unknown[]): Promise<unknown[]> } }).session;
      expect(await session.query('SELECT RELEASE_LOCK(?)', [a.lockNameOf('k')])).toEqual([1]);
      await lock.release();
      expect(lock.lost).toBeInstanceOf(LockLostError);
      expect(lock.lost!.message).toMatch(/RELEASE_LOCK returned NULL/);
      expect(lock.signal.aborted).toBe(true);
      // The session was ended, and the provider carries on with a fresh one.
      const again = await a.acquire('k');
      expect(again.fencingToken > lock.fencingToken).toBe(true);
      await again.release();
    }, 30_000);
  });
});
