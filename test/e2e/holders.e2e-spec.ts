import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { LockService, MysqlLockProvider, SerializedConfigError, type SerializedModuleOptions } from 'nestjs-serialized';
import { createApp } from '../../src/app.factory';
import { TEST_DATABASE_URL, TEST_MYSQL_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { HoldersFixturesModule, Rooms } from './fixtures/holders.controller';
import { Gates } from './fixtures/keys.controller';
import { ADAPTERS, type Adapter } from './http-app';

async function startHoldersApp(adapter: Adapter, serialized: SerializedModuleOptions): Promise<{ app: INestApplication; url: string }> {
  const app = await createApp({
    config: { adapter, store: 'memory', rewardTaskMs: 100, resourceTaskMs: 30 },
    serialized,
    imports: [HoldersFixturesModule],
    logger: false,
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return { app, url };
}

/** The drivers that hold a key together, each with its module options. */
const DRIVERS: [string, () => SerializedModuleOptions][] = [
  ['memory', () => ({ driver: 'memory' })],
  ['postgres', () => ({ driver: 'postgres', keyPrefix: uniqueId('holders'), postgres: { connectionString: TEST_DATABASE_URL } })],
  ['redis', () => ({ driver: 'redis', keyPrefix: uniqueId('holders'), redis: { url: TEST_REDIS_URL } })],
];

/**
 * Several holders of one key over HTTP on the drivers that hold a key together
 * (docs/semantics.md, "Several holders of one key"): `@Serialized(key, { concurrency: 2 })`
 * lets two requests of a tenant in and no third; `{ shared: true }` readers together,
 * a writer alone; reject mode answers 429 when full.
 */
describe.each(DRIVERS.flatMap(([driver, options]) => ADAPTERS.map((a) => [driver, a, options] as const)))(
  'several holders of one key over HTTP (%s, %s)',
  (_driver, adapter: Adapter, options) => {
    let app: INestApplication;
    let url: string;
    let gates: Gates;
    let rooms: Rooms;

    beforeAll(async () => {
      ({ app, url } = await startHoldersApp(adapter, options()));
      gates = app.get(Gates);
      rooms = app.get(Rooms);
    });
    afterAll(async () => {
      await app.close();
    });

    it('concurrency: 2 — six requests of one tenant: two inside at once, never three, let in in arrival order', async () => {
      const tenant = uniqueId('t');
      const tags = Array.from({ length: 6 }, (_, i) => uniqueId(`c${i}`));
      const calls: Promise<request.Response>[] = [];
      const waitingHere = async () => (await app.get(LockService).inspect(`tenant:${tenant}`)).waitingHere;
      for (const [i, tag] of tags.entries()) {
        calls.push(
          request(url)
            .post(`/fx-holders/capped/${tenant}?tag=${tag}`)
            .then((r) => r),
        );
        // Arrival order is the order the server saw them: each is inside or in line before the next is sent.
        if (i < 2) await waitFor(() => gates.entered.includes(tag), 5000, `${tag} inside`);
        else await waitFor(async () => (await waitingHere()) === i - 1, 5000, `${tag} in line`);
      }
      expect(tags.filter((tag) => gates.entered.includes(tag))).toEqual(tags.slice(0, 2));
      // The first to leave lets exactly one more in, the oldest waiter.
      gates.release(tags[1]);
      await waitFor(() => gates.entered.includes(tags[2]), 5000, 'third inside');
      expect(tags.filter((tag) => gates.entered.includes(tag))).toEqual(tags.slice(0, 3));
      for (const tag of tags) gates.release(tag);
      const responses = await Promise.all(calls);
      expect(gates.entered.filter((tag) => tags.includes(tag))).toEqual(tags);
      expect(responses.map((r) => r.status)).toEqual(tags.map(() => 201));
      expect(rooms.most.get(`tenant:${tenant}`)).toBe(2);
      const tokens = responses.map((r) => BigInt(r.body.token));
      expect(new Set(tokens).size).toBe(6);
    });

    it('reject mode: a third request while two are inside gets 429 LOCK_BUSY; another tenant is not affected', async () => {
      const [tenant, other] = [uniqueId('t'), uniqueId('t')];
      const [a, b, c] = [uniqueId('a'), uniqueId('b'), uniqueId('c')];
      const first = request(url)
        .post(`/fx-holders/capped-reject/${tenant}?tag=${a}`)
        .then((r) => r);
      const second = request(url)
        .post(`/fx-holders/capped-reject/${tenant}?tag=${b}`)
        .then((r) => r);
      await waitFor(() => gates.entered.includes(a) && gates.entered.includes(b), 5000, 'two inside');
      const third = await request(url).post(`/fx-holders/capped-reject/${tenant}?tag=${c}`);
      expect(third.status).toBe(429);
      expect(third.body.code).toBe('LOCK_BUSY');
      gates.release(c);
      const elsewhere = uniqueId('e');
      gates.release(elsewhere);
      expect((await request(url).post(`/fx-holders/capped-reject/${other}?tag=${elsewhere}`)).status).toBe(201);
      gates.release(a);
      gates.release(b);
      expect([(await first).status, (await second).status]).toEqual([201, 201]);
    });

    it('shared: readers inside together; a writer waits for them and is alone; a reader behind the waiting writer waits for it', async () => {
      const doc = uniqueId('doc');
      const [r1, r2, w, r3] = ['r1', 'r2', 'w', 'r3'].map((name) => uniqueId(name));
      const reads = [r1, r2].map((tag) =>
        request(url)
          .get(`/fx-holders/doc/${doc}?tag=${tag}`)
          .then((r) => r),
      );
      await waitFor(() => gates.entered.includes(r1) && gates.entered.includes(r2), 5000, 'readers inside together');
      const write = request(url)
        .post(`/fx-holders/doc/${doc}?tag=${w}`)
        .then((r) => r);
      const waitingHere = async () => (await app.get(LockService).inspect(`doc:${doc}`)).waitingHere;
      await waitFor(async () => (await waitingHere()) === 1, 5000, 'writer waiting');
      const late = request(url)
        .get(`/fx-holders/doc/${doc}?tag=${r3}`)
        .then((r) => r);
      await waitFor(async () => (await waitingHere()) === 2, 5000, 'late reader waiting');
      gates.release(r1);
      gates.release(r2);
      await waitFor(() => gates.entered.includes(w), 5000, 'writer inside');
      expect(gates.entered.includes(r3)).toBe(false);
      gates.release(w);
      gates.release(r3);
      const statuses = await Promise.all([...reads, write, late].map(async (call) => (await call).status));
      expect(statuses).toEqual([200, 200, 201, 200]);
      expect(rooms.overlaps).toBe(0);
      expect(gates.entered.indexOf(w)).toBeLessThan(gates.entered.indexOf(r3));
    });
  },
);

describe('several holders where the driver grants a key to one holder only', () => {
  it('mysql: @Serialized with concurrency stops start-up naming the handler; provider.acquire refuses it, changing nothing', async () => {
    const keyPrefix = uniqueId('holders');
    const failed = await startHoldersApp('express', { driver: 'mysql', keyPrefix, mysql: { url: TEST_MYSQL_URL } }).then(
      ({ app }) => app.close().then(() => undefined),
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(SerializedConfigError);
    expect((failed as Error).message).toMatch(
      /\{ concurrency: 2 \}\) on HoldersController#capped: the MysqlLockProvider grants a key to one holder/,
    );
    expect((failed as Error).message).toMatch(/\{ shared: true \}\) on HoldersController#read/);
    const provider = new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix });
    try {
      const refused = await provider.acquire('k', { concurrency: 2 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(RangeError);
      expect((refused as Error).message).toMatch(/concurrency: 2 is not available on MysqlLockProvider/);
      const alone = await provider.tryAcquire('k');
      expect(alone).not.toBeNull();
      await alone!.release();
    } finally {
      await provider.close();
    }
  });
});
