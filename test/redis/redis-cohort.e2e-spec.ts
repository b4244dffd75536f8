import { Redis } from 'ioredis';
import { LockLostError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/** Local hand-off inside one process: what it hands on, and what a local holder learns when Redis loses the key. */
describe('RedisLockProvider local hand-off', () => {
  const prefix = uniqueId('cohort-local');
  let redis: Redis;
  let provider: RedisLockProvider;
  let other: RedisLockProvider;

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 1200 });
    other = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 1200 });
  });

  afterAll(async () => {
    await Promise.all([provider.close(), other.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('keeps handing off in-process after the key went back to Redis and came back by a hand-off (whose lease is capped)', async () => {
    // The default lease (30 s) is longer than what a hand-off grants before the first renewal (heartbeatMs, 5 s).
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    const key = uniqueId('tenures');
    const before = provider.localHandOffs;
    const fences: bigint[] = [];
    // 40 sections queued at once: more than two blocks of 16 local hand-offs.
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const lock = await provider.acquire(key, { waitTimeoutMs: 20_000 });
        fences.push(lock.fencingToken);
        await new Promise((resolve) => setImmediate(resolve));
        await lock.release();
      }),
    );
    expect(fences.filter((f, i) => i > 0 && f <= fences[i - 1])).toEqual([]);
    // 39 hand-offs; the key goes back to Redis after each 16 in a row, and comes back to this process.
    expect(provider.localHandOffs - before).toBeGreaterThan(16);
    const keys = provider.redisKeysOf(key);
    expect(await redis.exists(keys.lock, keys.queue, keys.heartbeats)).toBe(0);
    await provider.close();
  });

  it("a local holder's signal aborts when Redis loses the key, and the key then passes on with a greater token", async () => {
    const key = uniqueId('lost');
    const keys = provider.redisKeysOf(key);
    const holder = await provider.acquire(key);
    const next = provider.acquire(key, { waitTimeoutMs: 20_000 });
    await waitFor(async () => (await redis.zcard(keys.queue)) === 1, 10_000, 'the local waiter queued');
    // Redis queued it; the provider knows its place once it has read the reply (replies come in order on its connection).
    await provider.ping(5000);
    const before = provider.localHandOffs;
    await holder.release();
    const local: Lock = await next;
    expect(provider.localHandOffs).toBe(before + 1);
    expect(local.fencingToken).toBe(holder.fencingToken + 1n);
    expect(await other.tryAcquire(key)).toBeNull();

    // Redis loses the key (a fail-over that missed the last write, a restart without persistence).
    await redis.del(keys.lock);
    await waitFor(() => local.signal.aborted, 10_000, "the local holder's signal");
    expect(local.signal.reason).toBeInstanceOf(LockLostError);

    const taken = await other.acquire(key, { waitTimeoutMs: 20_000 });
    expect(taken.fencingToken).toBeGreaterThan(local.fencingToken);
    await local.release();
    await taken.release();
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });

  it("per call: a holder acquired with handoff 'cohort' serves its process's waiter ahead of an earlier one of another instance; by default (strict) it does not", async () => {
    for (const handoff of ['cohort', undefined] as const) {
      const key = uniqueId(`per-call-${handoff ?? 'strict'}`);
      const keys = provider.redisKeysOf(key);
      const order: string[] = [];
      const holder = await provider.acquire(key, { handoff });
      const remote = other.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => (order.push('remote'), lock));
      await waitFor(async () => (await redis.zcard(keys.queue)) === 1, 10_000, 'the other instance queued');
      // The other instance queued 100 ms before this process's waiter comes (what strict order promises; its notice reaches this process meanwhile).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const local = provider.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => (order.push('local'), lock));
      await waitFor(async () => (await redis.zcard(keys.queue)) === 2, 10_000, 'the local waiter queued');
      // Replies come in order on the provider's connection: after this one, the local waiter's was read.
      await provider.ping(5000);
      const before = provider.localHandOffs;
      await holder.release();
      const first = await Promise.race([remote, local]);
      expect({ handoff, first: order[0], local: provider.localHandOffs - before }).toEqual(
        handoff === 'cohort' ? { handoff, first: 'local', local: 1 } : { handoff, first: 'remote', local: 0 },
      );
      await first.release();
      const second = await (order[0] === 'local' ? remote : local);
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
    }
  });
});
