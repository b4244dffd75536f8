import { Client } from 'pg';
import { LockService, PostgresLockProvider } from 'nestjs-serialized';
import { advisoryLockKey, gateKeyOf } from 'nestjs-serialized/providers/postgres/advisory-key.hash';
import { TEST_DATABASE_URL } from '../support/services';
import { WorkerProcess } from '../support/processes';
import { sleep, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';

const WORKERS = 'test/postgres/workers';

/**
 * Several holders of one key (`concurrency`, `shared`) on PostgreSQL, across real
 * OS processes sharing one database: a recorder row counts who is inside at once in
 * every process (docs/providers/postgres.md, "Several holders of one key").
 */
describe('PostgresLockProvider: several holders of one key across OS processes', () => {
  let pg: PgInspector;
  const workers: WorkerProcess[] = [];
  const providers: PostgresLockProvider[] = [];
  const tables: string[] = [];
  const start = (name: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, `${WORKERS}/shapes.worker.ts`, { DATABASE_URL: TEST_DATABASE_URL, ...env });
    workers.push(worker);
    return worker;
  };
  const provider = (keyPrefix: string, app: string): PostgresLockProvider => {
    const made = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix, applicationName: app, lockPoolSize: 3 });
    providers.push(made);
    return made;
  };
  /** The recorder: one row (who is inside now, the most at once, writers inside) and the log of grants. */
  const recorder = async (): Promise<string> => {
    const table = `nsz_holders_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await pg.query(`CREATE TABLE ${table} (id int PRIMARY KEY, inside int NOT NULL, writers int NOT NULL, peak int NOT NULL)`);
    await pg.query(`CREATE TABLE ${table}_log (token bigint PRIMARY KEY, process int NOT NULL, caller int NOT NULL)`);
    await pg.query(`INSERT INTO ${table} VALUES (1, 0, 0, 0)`);
    tables.push(table);
    return table;
  };
  const row = async (table: string) =>
    (await pg.query<{ inside: number; writers: number; peak: number }>(`SELECT inside, writers, peak FROM ${table} WHERE id = 1`))[0];

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(providers.splice(0).map((p) => p.close()));
    for (const table of tables.splice(0)) await pg.query(`DROP TABLE IF EXISTS ${table}, ${table}_log`);
  });
  afterAll(async () => {
    await pg.close();
  });

  it('concurrency 3 over 3 processes × 4 callers: 3 inside at once is reached and never exceeded; every token distinct and increasing per caller', async () => {
    const table = await recorder();
    const keyPrefix = uniquePrefix('grp');
    const procs = [0, 1, 2].map((i) =>
      start(`group-${i}`, {
        KEY_PREFIX: keyPrefix,
        APP_NAME: `${keyPrefix}:${i}`,
        KEY: 'tenant-1',
        SHAPE: 'group',
        LIMIT: '3',
        CALLERS: '4',
        ITERATIONS: '10',
        HOLD_MS: '30',
        TABLE: table,
      }),
    );
    await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
    procs.forEach((p) => p.send({ type: 'go' }));
    const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
    for (const result of results) expect(result).toMatchObject({ type: 'done', sections: 40, failed: [] });
    expect(await row(table)).toEqual({ inside: 0, writers: 0, peak: 3 });
    // Every process had the key beside another one at some point (no process starved, nor alone by luck).
    const log = await pg.query<{ token: string; process: number }>(`SELECT token::text, process FROM ${table}_log`);
    expect(log).toHaveLength(120);
    expect(new Set(log.map((entry) => entry.process)).size).toBe(3);
    for (const result of results)
      for (const tokens of result.tokens as string[][]) {
        expect(tokens).toHaveLength(10);
        for (let i = 1; i < tokens.length; i++) expect(BigInt(tokens[i]) > BigInt(tokens[i - 1])).toBe(true);
      }
    expect(await pg.advisoryLocks(`${keyPrefix}:0`)).toBe(0);
  }, 200_000);

  it('readers of 3 processes are inside together; a writer from another process gets in alone while they keep coming, and they go on after it', async () => {
    const table = await recorder();
    const keyPrefix = uniquePrefix('rw');
    const readers = [0, 1, 2].map((i) =>
      start(`reader-${i}`, {
        KEY_PREFIX: keyPrefix,
        APP_NAME: `${keyPrefix}:r${i}`,
        KEY: 'doc-1',
        SHAPE: 'reader',
        CALLERS: '3',
        ITERATIONS: '0',
        HOLD_MS: '40',
        TABLE: table,
      }),
    );
    await Promise.all(readers.map((p) => p.waitForType('ready', 60_000)));
    readers.forEach((p) => p.send({ type: 'go' }));
    // Readers of several processes inside at once: more than one process's callers count.
    await waitFor(async () => (await row(table)).peak > 3, 30_000, 'readers of several processes inside together');

    // A stream of readers overlaps all the time; the writer still gets in, alone.
    const writer = provider(keyPrefix, `${keyPrefix}:w`);
    const lock = await writer.acquire('doc-1', { waitTimeoutMs: 20_000 });
    const during = await row(table);
    expect(during).toMatchObject({ inside: 0, writers: 0 });
    await sleep(100);
    expect((await row(table)).inside).toBe(0);
    const [{ before }] = await pg.query<{ before: string }>(`SELECT count(*)::text AS before FROM ${table}_log`);
    await lock.release();
    // The readers carry on after it.
    await waitFor(
      async () => (await pg.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}_log`))[0].n > before,
      10_000,
      'readers again',
    );
    const [{ above }] = await pg.query<{ above: string }>(`SELECT count(*)::text AS above FROM ${table}_log WHERE token > $1`, [
      lock.fencingToken.toString(),
    ]);
    expect(Number(above)).toBeGreaterThan(0);
    readers.forEach((p) => p.send({ type: 'stop' }));
    const results = await Promise.all(readers.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 60_000)));
    for (const result of results) expect(result).toMatchObject({ type: 'done', writerWithCompany: 0, failed: [] });
    const log = await pg.query<{ token: string }>(`SELECT token::text FROM ${table}_log`);
    expect(new Set(log.map((entry) => entry.token)).size).toBe(log.length);
  }, 200_000);

  it('writers of two processes and readers of a third: a writer is never inside with anyone, and everyone gets through', async () => {
    const table = await recorder();
    const keyPrefix = uniquePrefix('mix');
    const common = { KEY_PREFIX: keyPrefix, KEY: 'doc-2', ITERATIONS: '15', HOLD_MS: '15', TABLE: table };
    const procs = [
      start('writer-0', { ...common, APP_NAME: `${keyPrefix}:w0`, SHAPE: 'writer', CALLERS: '2' }),
      start('writer-1', { ...common, APP_NAME: `${keyPrefix}:w1`, SHAPE: 'writer', CALLERS: '2' }),
      start('reader', { ...common, APP_NAME: `${keyPrefix}:r`, SHAPE: 'reader', CALLERS: '4' }),
    ];
    await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
    procs.forEach((p) => p.send({ type: 'go' }));
    const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
    expect(results.map((r) => [r.type, r.sections, r.writerWithCompany, r.failed])).toEqual([
      ['done', 30, 0, []],
      ['done', 30, 0, []],
      ['done', 60, 0, []],
    ]);
    expect(await row(table)).toMatchObject({ inside: 0, writers: 0 });
  }, 200_000);

  it('groups of 2, groups of 3 and readers in three processes: never two shapes inside together, never more than a limit, everyone gets through', async () => {
    const table = await recorder();
    await pg.query(
      `ALTER TABLE ${table} ADD COLUMN readers int NOT NULL DEFAULT 0, ADD COLUMN g2 int NOT NULL DEFAULT 0, ADD COLUMN g3 int NOT NULL DEFAULT 0`,
    );
    const keyPrefix = uniquePrefix('shapes');
    const common = { KEY_PREFIX: keyPrefix, KEY: 'doc-3', ITERATIONS: '12', HOLD_MS: '15', TABLE: table };
    const procs = [
      start('group-2', { ...common, APP_NAME: `${keyPrefix}:g2`, SHAPE: 'group', LIMIT: '2', CALLERS: '4', SHAPE_COLUMN: 'g2' }),
      start('group-3', { ...common, APP_NAME: `${keyPrefix}:g3`, SHAPE: 'group', LIMIT: '3', CALLERS: '4', SHAPE_COLUMN: 'g3' }),
      start('readers', { ...common, APP_NAME: `${keyPrefix}:r`, SHAPE: 'reader', CALLERS: '4', SHAPE_COLUMN: 'readers' }),
    ];
    await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
    procs.forEach((p) => p.send({ type: 'go' }));
    const results = await Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
    expect(results.map((r) => [r.type, r.sections, r.mixedCompany, r.failed])).toEqual([
      ['done', 48, 0, []],
      ['done', 48, 0, []],
      ['done', 48, 0, []],
    ]);
    // Under a steady mix the shapes take turns at the key's gate, so a run is mostly one holder after another.
    expect(await row(table)).toMatchObject({ inside: 0 });
  }, 200_000);

  it('callers of one key with different limits in two instances take turns: never more inside than the smaller limit', async () => {
    const keyPrefix = uniquePrefix('limits');
    const two = provider(keyPrefix, `${keyPrefix}:two`);
    const three = provider(keyPrefix, `${keyPrefix}:three`);
    const held = [await two.acquire('k', { concurrency: 2 }), await two.acquire('k', { concurrency: 2 })];
    // A caller allowing 3 would make a third holder beside two that allow 2.
    expect(await three.tryAcquire('k', { concurrency: 3 })).toBeNull();
    const waiting = three.acquire('k', { concurrency: 3, waitTimeoutMs: 10_000 });
    await sleep(300);
    await held[0].release();
    // One of the two still holds: the caller of another limit still waits.
    await sleep(300);
    expect(await Promise.race([waiting.then(() => 'in'), sleep(0).then(() => 'waiting')])).toBe('waiting');
    await held[1].release();
    const lock = await waiting;
    // The other way round: while a holder that allows 3 is inside, a caller allowing 2 waits for it.
    expect(await two.tryAcquire('k', { concurrency: 2 })).toBeNull();
    const second = await three.acquire('k', { concurrency: 3 });
    await lock.release();
    await second.release();
    const after = await two.acquire('k', { concurrency: 2, waitTimeoutMs: 5000 });
    await after.release();
    expect(await pg.advisoryLocks(`${keyPrefix}:two`)).toBe(0);
    expect(await pg.advisoryLocks(`${keyPrefix}:three`)).toBe(0);
  }, 60_000);

  it('readers and a group in two instances take turns: a reader waits for the group, a group member for the readers', async () => {
    const keyPrefix = uniquePrefix('rg');
    const groups = provider(keyPrefix, `${keyPrefix}:g`);
    const readers = provider(keyPrefix, `${keyPrefix}:r`);
    const member = await groups.acquire('k', { concurrency: 3 });
    expect(await readers.tryAcquire('k', { shared: true })).toBeNull();
    const reading = readers.acquire('k', { shared: true, waitTimeoutMs: 10_000 });
    await sleep(300);
    expect(await Promise.race([reading.then(() => 'in'), sleep(0).then(() => 'waiting')])).toBe('waiting');
    // Readers wait at the gate: a newcomer of the group does not pass them.
    expect(await groups.tryAcquire('k', { concurrency: 3 })).toBeNull();
    await member.release();
    const read = await reading;
    const alsoRead = await readers.acquire('k', { shared: true });
    expect(await groups.tryAcquire('k', { concurrency: 3 })).toBeNull();
    const joining = groups.acquire('k', { concurrency: 3, waitTimeoutMs: 10_000 });
    await read.release();
    await sleep(300);
    expect(await Promise.race([joining.then(() => 'in'), sleep(0).then(() => 'waiting')])).toBe('waiting');
    await alsoRead.release();
    // No reader sends a NOTIFY: the group's waiter finds the readers gone at its next look, within a second or so.
    const joined = await joining;
    expect(joined.fencingToken > alsoRead.fencingToken).toBe(true);
    await joined.release();
    expect(await pg.advisoryLocks(`${keyPrefix}:g`)).toBe(0);
    expect(await pg.advisoryLocks(`${keyPrefix}:r`)).toBe(0);
  }, 60_000);

  it("a SIGKILLed holder's place goes to a waiter of another process within a couple of seconds; the other place stays taken", async () => {
    const keyPrefix = uniquePrefix('kill');
    const holder = start('holder', {
      KEY_PREFIX: keyPrefix,
      APP_NAME: `${keyPrefix}:holder`,
      KEY: 'tenant-9',
      SHAPE: 'group',
      MODE: 'hold',
      LIMIT: '2',
      CALLERS: '1',
      TABLE: 'unused',
    });
    const holderOptions = { concurrency: 2 };
    // The holder process takes one place, this one the other.
    await holder.waitForType('held', 60_000);
    const mine = provider(keyPrefix, `${keyPrefix}:mine`);
    const other = await mine.acquire('tenant-9', holderOptions);
    await expect(mine.tryAcquire('tenant-9', holderOptions)).resolves.toBeNull();
    const waiter = provider(keyPrefix, `${keyPrefix}:waiter`);
    let grantedAt = 0;
    const waiting = waiter
      .acquire('tenant-9', { ...holderOptions, waitTimeoutMs: 30_000 })
      .then((lock) => ((grantedAt = Date.now()), lock));
    // The waiter holds the key's gate: it waits in the server.
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:waiter`)) >= 1, 10_000, 'the waiter at the gate');
    await sleep(300);
    expect(grantedAt).toBe(0);
    const killedAt = Date.now();
    holder.kill('SIGKILL');
    const lock = await waiting;
    expect(grantedAt - killedAt).toBeLessThan(3000);
    expect(lock.fencingToken > other.fencingToken).toBe(true);
    // Still two at most: the waiter's place and this process's.
    await expect(mine.tryAcquire('tenant-9', holderOptions)).resolves.toBeNull();
    await lock.release();
    await other.release();
  }, 90_000);

  it('PostgreSQL queues a reader behind a waiting writer: a reader of a third instance gets in only after the writer', async () => {
    const keyPrefix = uniquePrefix('queue');
    const [a, b, c] = ['a', 'b', 'c'].map((name) => provider(keyPrefix, `${keyPrefix}:${name}`));
    const reading = await a.acquire('k', { shared: true });
    const order: string[] = [];
    const writing = b.acquire('k', { waitTimeoutMs: 20_000 }).then((lock) => (order.push('writer'), lock));
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:b`, false)) === 1, 10_000, 'the writer waits in the server');
    // Free for readers but for the writer queued: a try is refused, a wait queues behind it.
    await expect(c.tryAcquire('k', { shared: true })).resolves.toBeNull();
    const later = c.acquire('k', { shared: true, waitTimeoutMs: 20_000 }).then((lock) => (order.push('reader'), lock));
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:c`, false)) === 1, 10_000, 'the reader waits in the server');
    await sleep(200);
    expect(order).toEqual([]);
    await reading.release();
    const writer = await writing;
    await sleep(200);
    expect(order).toEqual(['writer']);
    await writer.release();
    const reader = await later;
    expect(order).toEqual(['writer', 'reader']);
    expect(reader.fencingToken > writer.fencingToken && writer.fencingToken > reading.fencingToken).toBe(true);
    await reader.release();
  }, 60_000);

  it('inspect lists the holders of this instance with their tokens and those of another, shared ones as shared', async () => {
    const keyPrefix = uniquePrefix('insp');
    const [a, b] = ['a', 'b'].map((name) => provider(keyPrefix, `${keyPrefix}:${name}`));
    const service = new LockService(a);
    const here = [await a.acquire('doc', { shared: true }), await a.acquire('doc', { shared: true })];
    const there = await b.acquire('doc', { shared: true });
    const info = await service.inspect('doc');
    expect(info.holders.filter((holder) => holder.here).map((holder) => [holder.fencingToken, holder.shared])).toEqual(
      here.map((lock) => [lock.fencingToken, true]),
    );
    expect(info.holders.filter((holder) => !holder.here).map((holder) => [holder.instance?.split('#')[0], holder.shared])).toEqual([
      [`${keyPrefix}:b`, true],
    ]);
    await Promise.all([...here, there].map((lock) => lock.release()));
    expect((await service.inspect('doc')).holders).toEqual([]);
  }, 60_000);

  it('a waiter at the gate that aborts or times out leaves nothing behind: the next waiter takes the place', async () => {
    const keyPrefix = uniquePrefix('gate');
    const [a, b] = ['a', 'b'].map((name) => provider(keyPrefix, `${keyPrefix}:${name}`));
    const options = { concurrency: 1 + 1 };
    const held = [await a.acquire('k', options), await a.acquire('k', options)];
    const controller = new AbortController();
    const aborted = b.acquire('k', { ...options, signal: controller.signal, waitTimeoutMs: 20_000 }).then(
      () => 'granted',
      (error: Error) => error.message,
    );
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:b`)) >= 1, 10_000, 'the waiter at the gate');
    controller.abort(new Error('client left'));
    expect(await aborted).toBe('client left');
    await expect(b.acquire('k', { ...options, waitTimeoutMs: 300 })).rejects.toMatchObject({ name: 'LockTimeoutError' });
    const next = b.acquire('k', { ...options, waitTimeoutMs: 20_000 });
    await sleep(200);
    await held[0].release();
    const lock = await next;
    await Promise.all([lock.release(), held[1].release()]);
    expect(await a.auditLocks()).toBe(0);
    expect(await b.auditLocks()).toBe(0);
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:b`)) === 0, 5_000, 'nothing left of the waiters');
  }, 60_000);

  it('a waiter of another instance takes whichever place frees first, not one it picked: the middle one here', async () => {
    const keyPrefix = uniquePrefix('slot');
    const [a, b] = ['a', 'b'].map((name) => provider(keyPrefix, `${keyPrefix}:${name}`));
    const options = { concurrency: 3 };
    const held = [await a.acquire('k', options), await a.acquire('k', options), await a.acquire('k', options)];
    let grantedAt = 0;
    const waiting = b.acquire('k', { ...options, waitTimeoutMs: 20_000 }).then((lock) => ((grantedAt = Date.now()), lock));
    await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:b`)) >= 1, 10_000, 'the waiter at the gate');
    await sleep(200);
    expect(grantedAt).toBe(0);
    await held[1].release();
    const lock = await waiting;
    expect((lock as unknown as { slotKey: string }).slotKey).toBe((held[1] as unknown as { slotKey: string }).slotKey);
    await expect(b.tryAcquire('k', options)).resolves.toBeNull();
    await Promise.all([lock, held[0], held[2]].map((l) => l.release()));
  }, 60_000);

  it("an audit sent right behind a group member's try counts the place it took as owned: none is given back, none lost", async () => {
    const keyPrefix = uniquePrefix('audit');
    // One shared session: every try and every audit queue on it, one behind the other.
    const a = new PostgresLockProvider({
      connectionString: TEST_DATABASE_URL,
      keyPrefix,
      applicationName: `${keyPrefix}:a`,
      lockPoolSize: 1,
    });
    providers.push(a);
    const options = { concurrency: 3 };
    let givenBack = 0;
    let lost = 0;
    let auditing = true;
    const audits = (async () => {
      // Yielding each time: with no session open an audit answers at once.
      while (auditing) givenBack += await a.auditLocks().then(async (n) => (await new Promise((r) => setImmediate(r)), n));
    })();
    for (let round = 0; round < 150; round++) {
      const locks = (await Promise.all([0, 1, 2].map(() => a.tryAcquire('k', options)))).filter((l) => l !== null);
      await sleep(1);
      for (const lock of locks) if (lock.lost || lock.signal.aborted) lost++;
      // A place the audit gave back shows at release (pg_advisory_unlock returned false).
      await Promise.all(locks.map((l) => l.release().catch(() => lost++)));
    }
    auditing = false;
    await audits;
    expect({ givenBack, lost }).toEqual({ givenBack: 0, lost: 0 });
    expect(await a.auditLocks()).toBe(0);
  }, 60_000);

  it("a writer's try does not pass a group waiter granted the gate before it asked for the key (alone, and in a key set)", async () => {
    const keyPrefix = uniquePrefix('gate');
    const a = provider(keyPrefix, `${keyPrefix}:a`);
    // Another session holds the key's gate and not the key: a group waiter inside its
    // lockGate statement, in the instant between the two (models/postgres-holders.pml, P8).
    const waiter = new Client({ connectionString: TEST_DATABASE_URL, application_name: `${keyPrefix}:waiter` });
    await waiter.connect();
    try {
      await waiter.query('SELECT pg_advisory_lock($1::bigint)', [gateKeyOf(advisoryLockKey(keyPrefix, 'k'))]);
      await expect(a.tryAcquire('k')).resolves.toBeNull();
      // A key set's try (one statement for the set) looks at each key's gate too.
      const locks = new LockService(a);
      await expect(locks.run(['k', 'other'], () => 'ran', { waitTimeoutMs: 0 })).rejects.toMatchObject({ name: 'LockTimeoutError' });
      await expect(a.tryAcquire('other').then((other) => other?.release().then(() => 'free'))).resolves.toBe('free');
      await waiter.query('SELECT pg_advisory_unlock_all()');
      const lock = await a.tryAcquire('k');
      expect(lock).not.toBeNull();
      await lock!.release();
      await expect(locks.run(['k', 'other'], () => 'ran', { waitTimeoutMs: 0 })).resolves.toBe('ran');
      expect(await a.auditLocks()).toBe(0);
    } finally {
      await waiter.end();
    }
  }, 60_000);

  it('full: tryAcquire is null and reject mode is refused, in another process too; a released place is taken by the next waiter at once', async () => {
    const keyPrefix = uniquePrefix('full');
    const a = provider(keyPrefix, `${keyPrefix}:a`);
    const b = provider(keyPrefix, `${keyPrefix}:b`);
    const options = { concurrency: 2 };
    const first = await a.acquire('k', options);
    const second = await b.acquire('k', options);
    await expect(a.tryAcquire('k', options)).resolves.toBeNull();
    await expect(b.tryAcquire('k', options)).resolves.toBeNull();
    await expect(b.tryAcquire('k', { shared: true })).resolves.toBeNull();
    await expect(b.tryAcquire('k')).resolves.toBeNull();
    const third = b.acquire('k', { ...options, waitTimeoutMs: 20_000 });
    await sleep(200);
    await first.release();
    const lock = await third;
    expect(lock.fencingToken > second.fencingToken).toBe(true);
    await lock.release();
    await second.release();
    expect(await a.auditLocks()).toBe(0);
    expect(await b.auditLocks()).toBe(0);
    await waitFor(async () => (await pg.advisoryLocks(a.applicationName)) === 0, 5_000, 'nothing left');
  }, 60_000);
});
