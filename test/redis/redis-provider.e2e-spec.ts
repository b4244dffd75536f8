import { Test } from '@nestjs/testing';
import { Cluster, Redis } from 'ioredis';
import { LockLostError, LockProvider, LockService, RedisLockProvider, SerializedModule } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { lockValueOf, ownerIn } from './support/lock-value';

/** What only the Redis provider has to show (the shared behaviour is in the contract suite). */
describe('RedisLockProvider', () => {
  let redis: Redis;
  const providers: RedisLockProvider[] = [];
  /** Every prefix the suite used: their fencing counters are deleted at the end. */
  const prefixes: string[] = [];
  const prefix = (name: string): string => {
    const made = uniqueId(name);
    prefixes.push(made);
    return made;
  };
  const make = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix('provider'), ...options });
    providers.push(provider);
    return provider;
  };

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    const counters = (await Promise.all(prefixes.map((p) => redis.keys(`${p}:fence*`)))).flat();
    if (counters.length) await redis.del(...counters);
    await redis.quit();
  });

  describe('wiring', () => {
    it('SerializedModule.forRoot({ driver: "redis", redis: { url } }) opens its own connections and closes them on app.close()', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [SerializedModule.forRoot({ driver: 'redis', redis: { url: TEST_REDIS_URL }, keyPrefix: prefix('module') })],
      }).compile();
      const app = moduleRef.createNestApplication();
      await app.init();
      const provider = app.get(LockProvider);
      expect(provider).toBeInstanceOf(RedisLockProvider);
      const result = await app.get(LockService).run('wiring:url', (lock) => lock.fencingToken);
      expect(typeof result).toBe('bigint');
      await app.close();
      expect((provider as RedisLockProvider).client.status).toBe('end');
    });

    it("{ redis: { client } } uses the app's client and never closes it", async () => {
      const client = new Redis(TEST_REDIS_URL);
      try {
        const moduleRef = await Test.createTestingModule({
          imports: [SerializedModule.forRoot({ driver: 'redis', redis: { client }, keyPrefix: prefix('module') })],
        }).compile();
        const app = moduleRef.createNestApplication();
        await app.init();
        const provider = app.get(LockProvider) as RedisLockProvider;
        expect(provider.client).toBe(client);
        // A waiter makes the provider open its subscriber connection (its own: it closes that one).
        const holder = await provider.acquire('wiring:client');
        const waiter = provider.acquire('wiring:client');
        await sleep(50);
        await holder.release();
        await (await waiter).release();
        await app.close();
        expect(client.status).toBe('ready');
        expect(await client.ping()).toBe('PONG');
      } finally {
        await client.quit();
      }
    });

    it('SERIALIZED_DRIVER=redis and REDIS_URL from the environment', async () => {
      const saved = { ...process.env };
      Object.assign(process.env, { SERIALIZED_DRIVER: 'redis', REDIS_URL: TEST_REDIS_URL, SERIALIZED_KEY_PREFIX: prefix('env') });
      try {
        const moduleRef = await Test.createTestingModule({ imports: [SerializedModule.forRoot()] }).compile();
        const app = moduleRef.createNestApplication();
        await app.init();
        expect(app.get(LockProvider)).toBeInstanceOf(RedisLockProvider);
        await expect(app.get(LockService).run('wiring:env', () => 'ran')).resolves.toBe('ran');
        await app.close();
      } finally {
        process.env = saved;
      }
    });
  });

  describe('hand-off', () => {
    it('a release passes ownership in Redis straight to the next waiter of another process before it wakes', async () => {
      const keyPrefix = prefix('handoff');
      const a = make({ keyPrefix });
      const b = make({ keyPrefix });
      const key = 'handoff:one';
      const first = await a.acquire(key);
      const waiting = b.acquire(key);
      await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 1, 5000, 'the waiter to queue');
      await first.release();
      // Right after the release's single round trip, the key already belongs to the waiter.
      const ownerAfterRelease = await redis.get(a.redisKeysOf(key).lock);
      const second = await waiting;
      // Its owner token; the fencing token too, unless the waiter's process had not heard its
      // hand-off message yet and its heart-beat gave it a fresh block (which the key names by now).
      expect(ownerIn(ownerAfterRelease)).toBe((second as unknown as { token: string }).token);
      expect(await redis.get(a.redisKeysOf(key).lock)).toBe(lockValueOf(second));
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
      expect(await redis.exists(a.redisKeysOf(key).lock)).toBe(0);
    });

    it('gives every Redis key of a lock an expiry while it is held or waited for', async () => {
      const provider = make({ heartbeatMs: 2000 });
      const key = 'expiry:one';
      const holder = await provider.acquire(key, { leaseMs: 5000 });
      const waiter = provider.acquire(key);
      const keys = provider.redisKeysOf(key);
      await waitFor(async () => (await redis.exists(keys.queue)) === 1, 5000, 'the queue key');
      for (const redisKey of [keys.lock, keys.queue, keys.heartbeats]) {
        const ttl = await redis.pttl(redisKey);
        expect(ttl).toBeGreaterThan(0);
      }
      await holder.release();
      await (await waiter).release();
      const left = (await redis.keys(`${keys.lock.split(':{')[0]}:*`)).filter((k) => !provider.isFencingCounter(k));
      expect(left).toEqual([]);
    });
  });

  describe('leases', () => {
    it('aborts lock.signal with LockLostError when the key is taken away, and its release leaves the new owner alone', async () => {
      const keyPrefix = prefix('lost');
      const provider = make({ keyPrefix, leaseMs: 300 });
      const other = make({ keyPrefix });
      const key = 'lost:one';
      const lock = await provider.acquire(key);
      // What a fail-over to a replica that never saw the lock looks like.
      await redis.del(provider.redisKeysOf(key).lock);
      const successor = await other.acquire(key, { waitTimeoutMs: 1000 });
      const reason = await new Promise<unknown>((resolve) => {
        if (lock.signal.aborted) resolve(lock.signal.reason);
        lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true });
      });
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as Error).message).toContain(key);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
      await lock.release();
      expect(await redis.get(provider.redisKeysOf(key).lock)).toBe(lockValueOf(successor));
      expect(successor.fencingToken).toBeGreaterThan(lock.fencingToken);
      await successor.release();
    });

    it('lets a holder that stopped renewing (a crashed process) lose the key to a waiter within one lease', async () => {
      const keyPrefix = prefix('crash');
      const crashed = make({ keyPrefix, leaseMs: 400, shutdownGraceMs: 0 });
      const waiterSide = make({ keyPrefix });
      const key = 'crash:one';
      const held = await crashed.acquire(key);
      (held as unknown as { stopRenewing(): void }).stopRenewing();
      const waiting = waiterSide.acquire(key, { waitTimeoutMs: 10_000 });
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      await next.release();
    });
  });

  describe('Cluster', () => {
    let cluster: Cluster;
    let clusterFrom = 0;
    beforeAll(() => {
      clusterFrom = prefixes.length;
      const nodes = process.env.TEST_REDIS_CLUSTER_NODES;
      if (!nodes) throw new Error('TEST_REDIS_CLUSTER_NODES is not set: the jest global set-up starts the test cluster');
      cluster = new Cluster(nodes.split(',').map((n) => ({ host: n.split(':')[0], port: Number(n.split(':')[1]) })));
    });
    afterAll(async () => {
      const clusterPrefixes = prefixes.slice(clusterFrom);
      await Promise.all(
        cluster.nodes('master').map(async (node) => {
          const counters = (await Promise.all(clusterPrefixes.map((p) => node.keys(`${p}:fence*`)))).flat();
          for (const key of counters) await node.del(key);
        }),
      );
      await cluster.quit();
    });

    it('keeps every key of a lock in one slot, whatever the key contains (braces included)', async () => {
      const provider = make({ client: cluster });
      const keys = ['plain:1', 'braces:{user}:1', 'braces:}{', 'percent:%7B', 'unicode:ключ', 'empty-tag:{}'];
      for (const key of keys) {
        const names = provider.redisKeysOf(key);
        const slots = await Promise.all([names.lock, names.queue, names.heartbeats, names.fence].map((k) => cluster.cluster('KEYSLOT', k)));
        expect(new Set(slots).size).toBe(1);
      }
      // Different keys stay different locks ('{' is not its escaped spelling).
      const held = await Promise.all(keys.map((key) => provider.acquire(key, { waitTimeoutMs: 1000 })));
      const tokens = held.map((lock) => lock.fencingToken);
      await Promise.all(held.map((lock) => lock.release()));
      expect(tokens.every((t) => t > 0n)).toBe(true);
      // Fencing still increases per key across successive holders on a slot counter.
      const again = await provider.acquire(keys[1]);
      expect(again.fencingToken).toBeGreaterThan(tokens[1]);
      await again.release();
    });
  });
});
