import { Redis } from 'ioredis';
import { LockTimeoutError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { ThrowawayRedis } from './support/throwaway-redis';
import { commandsRun } from './support/commands-run';
import { deleteKeysWithPrefix } from './support/delete-keys';
import { listening } from './support/listening';

/**
 * Riders: while this process holds a key, its new waiters of that key wait in the
 * process without a place in the Redis queue, and are served by local hand-offs
 * (docs/semantics.md, Local hand-off).
 */
describe('RedisLockProvider riders (waiters without a place of their own while this process holds the key)', () => {
  const prefix = uniqueId('riders');
  let redis: Redis;
  let provider: RedisLockProvider;
  let other: RedisLockProvider;

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, maxLocalHandOffs: 2 });
    other = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    await listening(provider, 'warm-up');
  });

  afterAll(async () => {
    await Promise.all([provider.close(), other.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('100 waiters looping on one key in one process: under 3 Redis commands per acquisition (INFO commandstats, private server), tokens strictly increasing, no overlap', async () => {
    const server = await ThrowawayRedis.create();
    await server.start();
    const admin = new Redis(server.url);
    const own = new RedisLockProvider({ url: server.url, keyPrefix: uniqueId('count') });
    try {
      const key = 'hot';
      // Scripts loaded and connections up before counting.
      await (await own.acquire('load')).release();
      await admin.config('RESETSTAT');
      const rounds = 20;
      const fences: bigint[] = [];
      let inside = 0;
      let overlaps = 0;
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          for (let round = 0; round < rounds; round++) {
            const lock = await own.acquire(key, { waitTimeoutMs: 60_000 });
            if (inside++ > 0) overlaps++;
            fences.push(lock.fencingToken);
            await Promise.resolve();
            inside--;
            await lock.release();
          }
        }),
      );
      const perAcquisition = (await commandsRun(admin)) / (100 * rounds);
      console.log(`riders: ${perAcquisition.toFixed(2)} Redis commands per acquisition, ${own.localHandOffs} local hand-offs of ${100 * rounds}`);
      expect(overlaps).toBe(0);
      expect(fences.filter((f, i) => i > 0 && f <= fences[i - 1])).toEqual([]);
      // Every waiter with a place of its own costs about 12.8 (acquire, heart-beat entry,
      // removal); here the first round has one each (~0.6), then a block per 17 (1.5-1.8 measured).
      expect(perAcquisition).toBeLessThan(3);
      const keys = own.redisKeysOf(key);
      await waitFor(async () => (await admin.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
    } finally {
      await own.close();
      await admin.quit();
      await server.kill();
    }
  }, 120_000);

  it('a rider that times out or is aborted leaves alone; the others stay and get the key in order, with no place in Redis meanwhile', async () => {
    const key = uniqueId('leave');
    const keys = provider.redisKeysOf(key);
    const holder = await provider.acquire(key);
    const order: string[] = [];
    const take = (id: string, options: { waitTimeoutMs: number; signal?: AbortSignal }): Promise<Lock> =>
      provider.acquire(key, options).then((lock) => (order.push(id), lock));
    const first = take('first', { waitTimeoutMs: 20_000 });
    const timesOut = take('times-out', { waitTimeoutMs: 50 });
    const aborts = new AbortController();
    const aborted = take('aborted', { waitTimeoutMs: 20_000, signal: aborts.signal });
    const last = take('last', { waitTimeoutMs: 20_000 });
    await provider.ping(5000);
    // Four waiters, no place in the Redis queue.
    expect(await redis.exists(keys.queue, keys.heartbeats)).toBe(0);
    await expect(timesOut).rejects.toBeInstanceOf(LockTimeoutError);
    aborts.abort(new Error('caller went away'));
    await expect(aborted).rejects.toThrow('caller went away');
    expect(await redis.exists(keys.queue, keys.heartbeats)).toBe(0);

    await holder.release();
    const one = await first;
    expect(one.fencingToken).toBeGreaterThan(holder.fencingToken);
    await one.release();
    const two = await last;
    expect(two.fencingToken).toBeGreaterThan(one.fencingToken);
    expect(order).toEqual(['first', 'last']);
    expect(await other.tryAcquire(key)).toBeNull();
    await two.release();
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });

  it('strict: riders that came before another instance queued go first, past the end of the block; a waiter of this process that came after it waits behind it', async () => {
    const key = uniqueId('strand');
    const keys = provider.redisKeysOf(key);
    const order: string[] = [];
    const fences: bigint[] = [];
    const record = (id: string) => (lock: Lock): Lock => (order.push(id), fences.push(lock.fencingToken), lock);
    const holder = await provider.acquire(key);
    // maxLocalHandOffs 2: r1 and r2 are served under this tenure's block, r3 and r4 under the block its release keeps the key with.
    const riders = ['r1', 'r2', 'r3', 'r4'].map((id) => provider.acquire(key, { waitTimeoutMs: 20_000 }).then(record(id)));
    await provider.ping(5000);
    expect(await redis.exists(keys.queue)).toBe(0);
    const remote = other.acquire(key, { waitTimeoutMs: 20_000 }).then(record('remote'));
    await waitFor(async () => (await redis.zcard(keys.queue)) === 1, 10_000, 'the other instance queued');
    // Its notice reaches this process meanwhile (strict order holds for waiters 100 ms apart).
    await sleep(100);
    // A waiter of this process after the other instance's: it takes a place, behind it.
    const late = provider.acquire(key, { waitTimeoutMs: 20_000 }).then(record('late'));
    await waitFor(async () => (await redis.zcard(keys.queue)) === 2, 10_000, 'the late waiter queued');
    await provider.ping(5000);

    let current: Lock = holder;
    const next = [...riders, remote, late];
    for (let i = 0; i < next.length; i++) {
      await current.release();
      await waitFor(() => order.length > i, 20_000, `holder ${i + 1}`);
      current = await next[['r1', 'r2', 'r3', 'r4', 'remote', 'late'].indexOf(order[i])];
    }
    await current.release();
    expect(order).toEqual(['r1', 'r2', 'r3', 'r4', 'remote', 'late']);
    expect([holder.fencingToken, ...fences].filter((f, i, all) => i > 0 && f <= all[i - 1])).toEqual([]);
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });
});
