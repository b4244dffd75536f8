import request from 'supertest';
import { WorkerProcess } from '../support/processes';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { databaseTarget } from '../postgres/support/provider-set';
import { PgBouncer } from './support/pgbouncer';
import type { AdapterName } from './support/transaction-app';

/**
 * Transaction mode through a real PgBouncer in `pool_mode = transaction`,
 * where session advisory locks cannot work: two app processes, each with
 * its own pool, every statement through the pooler.
 */
describe.each<AdapterName>(['typeorm', 'drizzle'])(
  'transaction mode through PgBouncer (pool_mode = transaction), %s, two processes',
  (adapter) => {
    let pg: PgInspector;
    let bouncer: PgBouncer;
    const workers: WorkerProcess[] = [];
    let urls: string[] = [];
    const table = `tx_bouncer_${process.pid}_${adapter}`;

    beforeAll(async () => {
      pg = await PgInspector.connect();
      await pg.query(`DROP TABLE IF EXISTS ${table}`);
      await pg.query(`CREATE TABLE ${table} (id serial PRIMARY KEY, user_id text NOT NULL, token bigint)`);
      bouncer = new PgBouncer({ ...databaseTarget(), database: 'test' }, 6);
      await bouncer.start();
      const keyPrefix = uniquePrefix(`txb-${adapter}`);
      for (const name of ['a', 'b']) {
        workers.push(
          WorkerProcess.start(`app-${name}`, 'test/transaction/workers/transaction-app.worker.ts', {
            ADAPTER: adapter,
            DATABASE_URL: bouncer.url(),
            KEY_PREFIX: keyPrefix,
            TABLE: table,
            POOL_SIZE: '4',
          }),
        );
      }
      urls = (await Promise.all(workers.map((w) => w.waitFor((m) => m.type === 'ready', 60_000)))).map((m) => m.url as string);
    }, 90_000);
    afterAll(async () => {
      for (const worker of workers) worker.send({ type: 'close' });
      await Promise.all(workers.map((w) => w.exited));
      await bouncer?.stop();
      await pg.query(`DROP TABLE IF EXISTS ${table}`);
      await pg.close();
    });

    const claims = async (userId: string) =>
      await pg.query<{ token: string | null }>(`SELECT token FROM ${table} WHERE user_id = $1 ORDER BY id`, [userId]);

    it('20 duplicates per process: the naive twin claims more than once, the serialized handler exactly once', async () => {
      const burst = (path: string) => Promise.all(urls.flatMap((url) => Array.from({ length: 20 }, () => request(url).post(path))));
      // The control: on a loaded host one burst may reach the server spread out enough to claim once; three bursts never did.
      let naiveClaims = 0;
      for (let attempt = 1; attempt <= 3 && naiveClaims <= 1; attempt++) {
        const naive = await burst(`/naive/u1-${attempt}`);
        expect(naive.every((r) => r.status === 201)).toBe(true);
        naiveClaims = (await claims(`u1-${attempt}`)).length;
      }
      expect(naiveClaims).toBeGreaterThan(1);
      const serialized = await burst('/serialized/u2');
      expect(serialized.map((r) => r.status)).toEqual(Array(40).fill(201));
      expect(serialized.filter((r) => r.body.claimed)).toHaveLength(1);
      expect((await claims('u2')).length).toBe(1);
    });

    it('holders of both processes each get a fencing token of their own', async () => {
      const responses = await Promise.all(urls.flatMap((url) => Array.from({ length: 10 }, () => request(url).post('/hold/u3?ms=5'))));
      expect(responses.every((r) => r.status === 201)).toBe(true);
      const tokens = responses.map((r) => BigInt(r.body.token)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      expect(new Set(tokens.map(String)).size).toBe(20);
    });

    it('a PgBouncer restart fails the calls in flight with 503 or completes them; afterwards the key serializes again', async () => {
      const inFlight = Promise.all(urls.map((url) => request(url).post('/hold/u4?ms=300')));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await bouncer.restart();
      const statuses = (await inFlight).map((r) => r.status);
      for (const status of statuses) expect([201, 500, 503]).toContain(status);
      const after = await Promise.all(urls.flatMap((url) => Array.from({ length: 10 }, () => request(url).post('/serialized/u5'))));
      expect(after.every((r) => r.status === 201)).toBe(true);
      expect((await claims('u5')).length).toBe(1);
    });
  },
);
