import { TEST_DATABASE_URL } from '../support/services';
import { WorkerProcess } from '../support/processes';
import { PgInspector, uniquePrefix } from './support/pg-inspect';

const WORKER = 'test/postgres/workers/set-shapes.worker.ts';

/**
 * `concurrency` and `shared` on key sets across real OS processes sharing one
 * database: they apply to each key of the set (docs/semantics.md, "Several keys at
 * once"). A recorder row per key counts who is inside at once in every process.
 */
describe('PostgreSQL key sets with shared and concurrency across OS processes', () => {
  let pg: PgInspector;
  const workers: WorkerProcess[] = [];
  const tables: string[] = [];
  const start = (name: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, WORKER, { DATABASE_URL: TEST_DATABASE_URL, ...env });
    workers.push(worker);
    return worker;
  };
  /** The recorder: one row per key (who is inside now, writers inside, the most at once). */
  const recorder = async (keys: string[]): Promise<string> => {
    const table = `nsz_set_shapes_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await pg.query(`CREATE TABLE ${table} (key text PRIMARY KEY, inside int NOT NULL, writers int NOT NULL, peak int NOT NULL)`);
    for (const key of keys) await pg.query(`INSERT INTO ${table} VALUES ($1, 0, 0, 0)`, [key]);
    tables.push(table);
    return table;
  };
  const rows = async (table: string) =>
    Object.fromEntries(
      (await pg.query<{ key: string; inside: number; writers: number; peak: number }>(`SELECT * FROM ${table} ORDER BY key`)).map(
        ({ key, inside, writers, peak }) => [key, { inside, writers, peak }],
      ),
    );
  const runAll = async (procs: WorkerProcess[]) => {
    await Promise.all(procs.map((p) => p.waitForType('ready', 60_000)));
    procs.forEach((p) => p.send({ type: 'go' }));
    return Promise.all(procs.map((p) => p.waitFor((m) => m.type === 'done' || m.type === 'failed', 150_000)));
  };

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    for (const table of tables.splice(0)) await pg.query(`DROP TABLE IF EXISTS ${table}`);
  });
  afterAll(async () => {
    await pg.close();
  });

  it('concurrency 2 on the set [x, y] from 3 processes × 2 callers (both orders): 2 sets inside at once per key, never 3', async () => {
    const table = await recorder(['x', 'y']);
    const keyPrefix = uniquePrefix('set-group');
    const procs = [0, 1, 2].map((i) =>
      start(`set-group-${i}`, {
        KEY_PREFIX: keyPrefix,
        APP_NAME: `${keyPrefix}:${i}`,
        KEYS: i === 1 ? 'y,x' : 'x,y',
        SHAPE: 'group',
        LIMIT: '2',
        CALLERS: '2',
        ITERATIONS: '8',
        HOLD_MS: '30',
        TABLE: table,
      }),
    );
    const results = await runAll(procs);
    for (const result of results) expect(result).toMatchObject({ type: 'done', sections: 16, failed: [] });
    expect(await rows(table)).toEqual({ x: { inside: 0, writers: 0, peak: 2 }, y: { inside: 0, writers: 0, peak: 2 } });
    const tokens = results.flatMap((result) => result.tokens as string[]);
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const i of [0, 1, 2]) expect(await pg.advisoryLocks(`${keyPrefix}:${i}`)).toBe(0);
  }, 200_000);

  it('shared sets [x, y] of 2 processes are inside together; writers of y and of [x, z] in 2 others never have company', async () => {
    const table = await recorder(['x', 'y', 'z']);
    const keyPrefix = uniquePrefix('set-rw');
    const readers = [0, 1].map((i) =>
      start(`set-reader-${i}`, {
        KEY_PREFIX: keyPrefix,
        APP_NAME: `${keyPrefix}:r${i}`,
        KEYS: 'x,y',
        SHAPE: 'reader',
        CALLERS: '3',
        ITERATIONS: '10',
        HOLD_MS: '30',
        TABLE: table,
      }),
    );
    const writers = [
      ['y', 'w0'],
      ['z,x', 'w1'],
    ].map(([keys, name]) =>
      start(`set-writer-${name}`, {
        KEY_PREFIX: keyPrefix,
        APP_NAME: `${keyPrefix}:${name}`,
        KEYS: keys,
        SHAPE: 'writer',
        CALLERS: '2',
        ITERATIONS: '6',
        HOLD_MS: '20',
        TABLE: table,
      }),
    );
    const results = await runAll([...readers, ...writers]);
    for (const result of results) expect(result).toMatchObject({ type: 'done', writerWithCompany: 0, failed: [] });
    expect(results.map((result) => result.sections)).toEqual([30, 30, 12, 12]);
    const after = await rows(table);
    // Readers were inside together on both keys; writers were alone on theirs.
    expect(after.x.peak).toBeGreaterThan(1);
    expect(after.y.peak).toBeGreaterThan(1);
    expect(after.z.peak).toBe(1);
    for (const key of ['x', 'y', 'z']) expect(after[key]).toMatchObject({ inside: 0, writers: 0 });
  }, 200_000);
});
