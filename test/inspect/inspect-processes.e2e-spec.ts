import { LockService, PostgresLockProvider, RedisLockProvider } from 'nestjs-serialized';
import { Redis } from 'ioredis';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { deleteKeysWithPrefix } from '../redis/support/delete-keys';
import { WorkerProcess } from '../support/processes';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

const LEASE_MS = 20_000;

/**
 * `LockService.inspect` with the holder and the waiters in other OS processes:
 * what one instance can tell of the others through the backend.
 */
describe('LockService.inspect across OS processes', () => {
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  });

  describe('Redis', () => {
    const prefix = uniqueId('inspect');
    let redis: Redis;
    let provider: RedisLockProvider;
    let locks: LockService;
    let holder: WorkerProcess;
    let waiter: WorkerProcess;

    beforeAll(async () => {
      const env = { REDIS_URL: TEST_REDIS_URL, KEY_PREFIX: prefix, LEASE_MS: String(LEASE_MS) };
      holder = WorkerProcess.start('redis-holder', 'test/redis/workers/lock.worker.ts', env);
      waiter = WorkerProcess.start('redis-waiter', 'test/redis/workers/lock.worker.ts', env);
      workers.push(holder, waiter);
      redis = new Redis(TEST_REDIS_URL);
      provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: LEASE_MS });
      locks = new LockService(provider);
      await Promise.all([holder.waitForType('ready', 120_000), waiter.waitForType('ready', 120_000)]);
    }, 150_000);
    afterAll(async () => {
      await provider.close();
      await deleteKeysWithPrefix(redis, prefix);
      redis.disconnect();
    });

    it('sees the holder of another process with its session, fencing token and lease, counts the waiters of two processes, and nothing once released', async () => {
      const key = uniqueId('cart');
      const session = (await holder.waitForType('ready')).session as string;
      holder.send({ type: 'acquire', id: 'h', key, hold: -1 });
      const acquired = await holder.waitFor((m) => m.type === 'acquired' && m.id === 'h');
      // One waiter in another process, two in this one.
      waiter.send({ type: 'acquire', id: 'w', key, waitTimeoutMs: 20_000, hold: 0 });
      await waitFor(async () => (await redis.zcard(provider.redisKeysOf(key).queue)) === 1, 10_000, "the other process's waiter queued");
      const order: string[] = [];
      const runs = ['a', 'b'].map((id) => locks.run(key, () => void order.push(id), { waitTimeoutMs: 20_000 }));
      await waitFor(async () => (await locks.inspect(key)).waitingHere === 2, 10_000, 'two waiters here');

      const info = await locks.inspect(key);
      expect(info).toEqual({
        key,
        // Its fencing token as the holder's process has it: Redis keeps it beside the owner token.
        holders: [
          {
            fencingToken: BigInt(acquired.fence as string),
            here: false,
            instance: session,
            shared: false,
            leaseRemainingMs: expect.any(Number),
          },
        ],
        waiting: 3,
        waitingHere: 2,
      });
      expect(info.holders[0].leaseRemainingMs).toBeGreaterThan(0);
      expect(info.holders[0].leaseRemainingMs).toBeLessThanOrEqual(LEASE_MS);

      holder.send({ type: 'release', id: 'h' });
      await waiter.waitFor((m) => m.type === 'released' && m.id === 'w', 20_000);
      await Promise.all(runs);
      expect(order).toEqual(['a', 'b']);
      expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
    }, 60_000);
  });

  describe('PostgreSQL', () => {
    const keyPrefix = uniquePrefix('inspect');
    const holderApp = `${keyPrefix}:holder`;
    const key = 'cart-1';
    let pg: PgInspector;
    let provider: PostgresLockProvider;
    let locks: LockService;
    let holder: WorkerProcess;
    let waiter: WorkerProcess;

    beforeAll(async () => {
      const env = { DATABASE_URL: TEST_DATABASE_URL, KEY_PREFIX: keyPrefix, KEY: key };
      holder = WorkerProcess.start('pg-holder', 'test/postgres/workers/lock-commands.worker.ts', { ...env, APP_NAME: holderApp });
      waiter = WorkerProcess.start('pg-waiter', 'test/postgres/workers/lock-commands.worker.ts', {
        ...env,
        APP_NAME: `${keyPrefix}:waiter`,
      });
      workers.push(holder, waiter);
      pg = await PgInspector.connect();
      provider = new PostgresLockProvider({
        connectionString: TEST_DATABASE_URL,
        keyPrefix,
        applicationName: `${keyPrefix}:here`,
        lockPoolSize: 4,
      });
      locks = new LockService(provider);
      await Promise.all([holder.waitForType('ready', 120_000), waiter.waitForType('ready', 120_000)]);
    }, 150_000);
    afterAll(async () => {
      await provider.close();
      await pg.close();
    });

    it('sees the holder of another process as its session (application_name and pid), counts the waiters of two processes, and nothing once released', async () => {
      holder.send({ type: 'hold' });
      await holder.waitForType('held');
      const [holderPid] = await pg.pids(holderApp);
      // One waiter in another process (its session waits in the server), two in this one.
      waiter.send({ type: 'take', waitTimeoutMs: 20_000 });
      await waitFor(async () => (await pg.advisoryLocks(`${keyPrefix}:waiter`, false)) >= 1, 10_000, "the other process's session waiting");
      const order: string[] = [];
      const runs = ['a', 'b'].map((id) => locks.run(key, () => void order.push(id), { waitTimeoutMs: 20_000 }));
      await waitFor(async () => (await locks.inspect(key)).waitingHere === 2, 10_000, 'two waiters here');

      expect(await locks.inspect(key)).toEqual({
        key,
        holders: [{ here: false, instance: `${holderApp}#${holderPid}`, shared: false }],
        // Ours (2: one asks in the server, one in line) and the other process's session.
        waiting: 3,
        waitingHere: 2,
      });

      holder.send({ type: 'release' });
      await waiter.waitForType('took', 20_000);
      await Promise.all(runs);
      expect(order).toEqual(['a', 'b']);
      await waitFor(async () => (await locks.inspect(key)).holders.length === 0, 5000, 'nobody listed');
      expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
    }, 60_000);
  });
});
