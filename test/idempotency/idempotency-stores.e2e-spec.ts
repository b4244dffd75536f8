import fs from 'node:fs';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import request from 'supertest';
import { LockBackendError, PostgresLockProvider, RedisLockProvider } from 'nestjs-serialized';
import type { IdempotencyStore, StoredResponse } from 'nestjs-serialized';
import { PgInspector } from '../postgres/support/pg-inspect';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { serializedOptions, startIdempotencyApp, type RunningApp } from './support/idempotency-apps';

const ROOT = path.resolve(__dirname, '..', '..');
const record = (n: number): StoredResponse => ({
  fingerprint: 'f',
  kind: 'http',
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: Buffer.from(`{"n":${n}}`),
  storedAt: Date.now(),
});

/** The SQL block docs/providers/postgres.md ships for roles that may not run DDL. */
function documentedSchemaSql(file: string): string {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const match = /```sql\n(-- nestjs-serialized: the objects it creates at start-up[\s\S]*?)```/.exec(text);
  if (!match) throw new Error(`${file} has no SQL block for createSchema: false`);
  return match[1];
}

describe('@Idempotent records in Redis', () => {
  let app: RunningApp;
  const redis = new Redis(TEST_REDIS_URL);
  const keyPrefix = uniqueId('idemredis');

  beforeAll(async () => {
    app = await startIdempotencyApp('express', serializedOptions('redis', keyPrefix));
  });
  afterAll(async () => {
    await app.app.close();
    const keys = await redis.keys(`${keyPrefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it("keeps one string per key under the keyPrefix, in the lock's hash tag, expiring by Redis's own TTL", async () => {
    const account = uniqueId('acc');
    // Long enough that the key's 43-character hash cannot contain it by chance ('k1' did, once in a while).
    const clearKey = 'key-sent-in-clear-42';
    await request(app.url).post(`/idem/pay/${account}`).set('Idempotency-Key', clearKey).send({ amount: 1 }).expect(201);
    const pattern = new RegExp(`^${keyPrefix}:\\{idempotent:IdempotencyFixturesController\\.pay:[A-Za-z0-9_-]{43}\\}:idem$`);
    let keys: string[] = [];
    // The record is stored just after the response goes out, then the lock's keys go.
    await waitFor(
      async () => {
        keys = (await redis.keys(`${keyPrefix}:*`)).filter((k) => !k.includes(':fence'));
        return keys.length === 1 && pattern.test(keys[0]);
      },
      10_000,
      'the record alone under the prefix',
    );
    const ttl = await redis.pttl(keys[0]);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
    // Neither the key nor the user's values appear in clear.
    expect(keys[0]).not.toContain(clearKey);
    expect(keys[0]).not.toContain(account);
  });

  it('works on a Redis Cluster: each record lives in the slot of its lock', async () => {
    const nodes = process.env.TEST_REDIS_CLUSTER_NODES!.split(',').map((n) => ({ host: n.split(':')[0], port: Number(n.split(':')[1]) }));
    const cluster = new Cluster(nodes);
    await new Promise((resolve) => cluster.once('ready', resolve));
    const prefix = uniqueId('idemcluster');
    const provider = new RedisLockProvider({ client: cluster, keyPrefix: prefix });
    const store = provider.createIdempotencyStore();
    try {
      for (let n = 0; n < 12; n++) {
        const key = `idempotent:Route.m:${uniqueId('k')}`;
        await store.set(key, record(n), 10_000);
        expect((await store.get(key))?.body?.toString()).toBe(`{"n":${n}}`);
        // The same {hash tag} as the lock's keys: the same slot, whatever the key.
        expect(await cluster.exists(`${provider.redisKeysOf(key).lock}:idem`)).toBe(1);
      }
    } finally {
      await Promise.all(
        cluster.nodes('master').map(async (node) => {
          const keys = await node.keys(`${prefix}:*`);
          for (const key of keys) await node.del(key);
        }),
      );
      await provider.close();
      await cluster.quit();
    }
  });
});

describe('@Idempotent records in PostgreSQL', () => {
  let inspector: PgInspector;
  beforeAll(async () => {
    inspector = await PgInspector.connect();
  });
  afterAll(async () => {
    await inspector.close();
  });

  it('deletes expired rows as later records are written (a bounded sweep: at most 10 per write, oldest first)', async () => {
    const keyPrefix = uniqueId('idemsweep');
    const app = await startIdempotencyApp('express', serializedOptions('postgres', keyPrefix));
    try {
      await request(app.url)
        .post(`/idem/ttl/${uniqueId('t')}`)
        .set('Idempotency-Key', uniqueId('k'))
        .expect(201);
      for (let n = 0; n < 15; n++) {
        await inspector.query(
          `INSERT INTO nestjs_serialized_idempotency (key, record, expires_at) VALUES ($1, '{}', '1999-01-01'::timestamptz + $2 * interval '1 s')`,
          [`${keyPrefix}:stale:${n}`, n],
        );
      }
      const stale = async (): Promise<number> =>
        Number(
          (
            await inspector.query<{ n: string }>('SELECT count(*) AS n FROM nestjs_serialized_idempotency WHERE key LIKE $1', [
              `${keyPrefix}:stale:%`,
            ])
          )[0].n,
        );
      // The record is written just after its response goes out: wait for it. One write leaves 5 (it never gets to 0).
      await request(app.url)
        .post(`/idem/ttl/${uniqueId('t')}`)
        .set('Idempotency-Key', uniqueId('k'))
        .expect(201);
      await waitFor(async () => (await stale()) === 5, 5000, 'the first write to sweep 10 rows');
      await request(app.url)
        .post(`/idem/ttl/${uniqueId('t')}`)
        .set('Idempotency-Key', uniqueId('k'))
        .expect(201);
      await waitFor(async () => (await stale()) === 0, 5000, 'the second write to sweep the other 5');
    } finally {
      await app.app.close();
    }
  });

  it('with createSchema: false, creates nothing, says which SQL to run, and works once the documented SQL ran', async () => {
    // Short: the lock statements' names carry the sequence name (PostgreSQL keeps 63 characters of a name).
    const schema = `idem_${Math.random().toString(36).slice(2, 10)}`;
    const names = {
      fencingSequence: `${schema}.nestjs_serialized_fencing_token`,
      idempotencyTable: `${schema}.nestjs_serialized_idempotency`,
    };
    await inspector.query(`CREATE SCHEMA ${schema}`);
    const provider = new PostgresLockProvider({
      connectionString: TEST_DATABASE_URL,
      keyPrefix: schema,
      createSchema: false,
      connectTimeoutMs: 2000,
      ...names,
    });
    let store: IdempotencyStore | undefined;
    try {
      const lockError = await provider.acquire('k').catch((e: unknown) => e);
      expect(lockError).toBeInstanceOf(LockBackendError);
      expect((lockError as Error).message).toContain('is missing and createSchema is off');
      store = provider.createIdempotencyStore();
      const storeError = await store.get('idempotent:R.m:x').catch((e: unknown) => e);
      expect(storeError).toBeInstanceOf(LockBackendError);
      expect((storeError as Error).message).toContain('CREATE TABLE IF NOT EXISTS');
      const objects = await inspector.query(
        `SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1`,
        [schema],
      );
      expect(objects).toEqual([]);

      // What a DBA runs once, as documented (in the schema the app's search_path would name).
      const sql = documentedSchemaSql('docs/providers/postgres.md');
      expect(documentedSchemaSql('docs/idempotency.md')).toBe(sql);
      await inspector.query(`SET search_path TO ${schema}; ${sql} RESET search_path;`);

      // The pool refuses for a moment after a failed connection; then it opens one that finds the sequence.
      await waitFor(
        async () => {
          const lock = await provider.acquire('k').catch(() => undefined);
          await lock?.release();
          return lock !== undefined;
        },
        10_000,
        'a lock once the sequence exists',
      );
      await store.set('idempotent:R.m:x', record(7), 10_000);
      expect((await store.get('idempotent:R.m:x'))?.body?.toString()).toBe('{"n":7}');
    } finally {
      await store?.close();
      await provider.close();
      await inspector.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
