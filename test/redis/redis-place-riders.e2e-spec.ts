import { Redis } from 'ioredis';
import { RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { commandsRun } from './support/commands-run';
import { deleteKeysWithPrefix } from './support/delete-keys';
import { listening } from './support/listening';
import { ThrowawayRedis } from './support/throwaway-redis';

/**
 * Riders on a queued place: while this process's last place in the Redis queue has
 * nobody of another process behind it, a new waiter of this process takes no place
 * of its own; it rides behind that place and is served by a local hand-off when the
 * place gets the key (docs/semantics.md, Riders). Waiters that arrive while one of
 * the process's waiters is on its way to Redis wait for its reply, then ride behind it.
 * "Another process" is another provider instance: its own session, channel and owner tokens.
 */
describe('RedisLockProvider riders on a queued place (a batch of one process\'s waiters behind one place in Redis)', () => {
  const prefix = uniqueId('place-riders');
  let redis: Redis;
  let provider: RedisLockProvider;
  let other: RedisLockProvider;
  let third: RedisLockProvider;

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    other = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    third = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    await Promise.all([listening(provider, 'warm-up-1'), listening(other, 'warm-up-2'), listening(third, 'warm-up-3')]);
  });

  afterAll(async () => {
    await Promise.all([provider.close(), other.close(), third.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('two instances × 50 waiters looping on one key (private server): under 4 Redis commands per acquisition, no overlap, tokens increasing in the order sections ran', async () => {
    const server = await ThrowawayRedis.create();
    await server.start();
    const admin = new Redis(server.url);
    const own = uniqueId('count');
    const instances = [0, 1].map(() => new RedisLockProvider({ url: server.url, keyPrefix: own }));
    try {
      await Promise.all(instances.map((instance, i) => listening(instance, `load-${i}`)));
      await admin.config('RESETSTAT');
      const rounds = 10;
      const fences: bigint[] = [];
      let inside = 0;
      let overlaps = 0;
      await Promise.all(
        instances.flatMap((instance) =>
          Array.from({ length: 50 }, async () => {
            for (let round = 0; round < rounds; round++) {
              const lock = await instance.acquire('hot', { waitTimeoutMs: 60_000 });
              if (inside++ > 0) overlaps++;
              fences.push(lock.fencingToken);
              await Promise.resolve();
              inside--;
              await lock.release();
            }
          }),
        ),
      );
      const acquisitions = 2 * 50 * rounds;
      const perAcquisition = (await commandsRun(admin)) / acquisitions;
      const local = instances[0].localHandOffs + instances[1].localHandOffs;
      console.log(`place riders: ${perAcquisition.toFixed(2)} Redis commands per acquisition, ${local} local hand-offs of ${acquisitions}`);
      expect(overlaps).toBe(0);
      expect(fences.filter((f, i) => i > 0 && f <= fences[i - 1])).toEqual([]);
      // A place per waiter costs about 12 commands (acquire with its notices, heart-beat entry,
      // removal, grant): that is what each instance paid before riders could join a queued place.
      expect(perAcquisition).toBeLessThan(4);
      const keys = instances[0].redisKeysOf('hot');
      await waitFor(async () => (await admin.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
      await admin.quit();
      await server.kill();
    }
  }, 120_000);

  it('cohort mode: riders behind places do not let one instance keep the key — two instances × 25 waiters looping for a second both get a fair share, no overlap', async () => {
    const own = uniqueId('cohort-share');
    const instances = [0, 1].map(() => new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: own, handoff: 'cohort' }));
    try {
      await Promise.all(instances.map((instance, i) => listening(instance, `load-${i}`)));
      const sections = [0, 0];
      let inside = 0;
      let overlaps = 0;
      const until = Date.now() + 1000;
      await Promise.all(
        instances.flatMap((instance, i) =>
          Array.from({ length: 25 }, async () => {
            while (Date.now() < until) {
              const lock = await instance.acquire('shared', { waitTimeoutMs: 30_000 });
              if (inside++ > 0) overlaps++;
              sections[i]++;
              await Promise.resolve();
              inside--;
              await lock.release();
            }
          }),
        ),
      );
      console.log(`cohort share: ${sections.join(' / ')} sections`);
      expect(overlaps).toBe(0);
      // Each serves at most maxLocalHandOffs places (and their riders) ahead of the other's
      // waiter before the key goes back to Redis: the shares stay close (the defect: 99 % / 1 %).
      const total = sections[0] + sections[1];
      expect(Math.min(...sections) / total).toBeGreaterThan(0.25);
      const keys = instances[0].redisKeysOf('shared');
      await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  }, 60_000);

  it('strict order: riders behind this process\'s place go with it; a waiter of this process that comes after another instance queued behind that place waits behind it', async () => {
    const key = uniqueId('order');
    const keys = provider.redisKeysOf(key);
    const order: string[] = [];
    const fences: bigint[] = [];
    const take = (instance: RedisLockProvider, id: string): Promise<Lock> =>
      instance.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => (order.push(id), fences.push(lock.fencingToken), lock));
    const holder = await other.acquire(key);
    const w1 = take(provider, 'w1');
    await waitFor(async () => (await redis.zcard(keys.queue)) === 1, 10_000, 'w1 queued');
    await provider.ping(5000);
    // Behind w1's place, with nobody of another instance behind it: no places of their own.
    const w2 = take(provider, 'w2');
    const w3 = take(provider, 'w3');
    await provider.ping(5000);
    expect(await redis.zcard(keys.queue)).toBe(1);
    const remote = take(third, 'remote');
    await waitFor(async () => (await redis.zcard(keys.queue)) === 2, 10_000, 'the third instance queued');
    // Its notice (it queued behind w1's place) reaches this process meanwhile.
    await sleep(100);
    const w4 = take(provider, 'w4');
    await waitFor(async () => (await redis.zcard(keys.queue)) === 3, 10_000, 'w4 took a place of its own');
    await provider.ping(5000);

    const handedBefore = provider.localHandOffs;
    let current = holder;
    const next: Record<string, Promise<Lock>> = { w1, w2, w3, remote, w4 };
    for (let i = 0; i < 5; i++) {
      await current.release();
      await waitFor(() => order.length > i, 20_000, `holder ${i + 1}`);
      current = await next[order[i]];
    }
    await current.release();
    expect(order).toEqual(['w1', 'w2', 'w3', 'remote', 'w4']);
    expect([holder.fencingToken, ...fences].filter((f, i, all) => i > 0 && f <= all[i - 1])).toEqual([]);
    // w1 -> w2 -> w3 in-process; w3 -> remote and remote -> w4 through Redis.
    expect(provider.localHandOffs - handedBefore).toBe(2);
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });

  it('the waiter whose place they ride on gives up: its riders take places of their own and get the key in arrival order', async () => {
    const key = uniqueId('orphans');
    const keys = provider.redisKeysOf(key);
    const order: string[] = [];
    const holder = await other.acquire(key);
    const gone = new AbortController();
    const w1 = provider.acquire(key, { waitTimeoutMs: 20_000, signal: gone.signal });
    await waitFor(async () => (await redis.zcard(keys.queue)) === 1, 10_000, 'w1 queued');
    await provider.ping(5000);
    const riders = ['w2', 'w3'].map((id) => provider.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => (order.push(id), lock)));
    await provider.ping(5000);
    expect(await redis.zcard(keys.queue)).toBe(1);

    gone.abort(new Error('caller went away'));
    await expect(w1).rejects.toThrow('caller went away');
    // w1's place is gone; its riders now have places (w3 may ride behind w2's).
    await waitFor(async () => {
      const members = await redis.zrange(keys.queue, 0, -1);
      return members.length >= 1 && members.length <= 2;
    }, 10_000, 'the riders took places');
    await provider.ping(5000);
    await holder.release();
    const two = await riders[0];
    expect(two.fencingToken).toBeGreaterThan(holder.fencingToken);
    await two.release();
    const three = await riders[1];
    expect(three.fencingToken).toBeGreaterThan(two.fencingToken);
    await three.release();
    expect(order).toEqual(['w2', 'w3']);
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });

  it('maxLocalHandOffs: 0 (local hand-off off): nobody rides — each waiter of a burst takes a place of its own', async () => {
    const key = uniqueId('off');
    const off = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, maxLocalHandOffs: 0 });
    try {
      await listening(off, uniqueId('off-warm-up'));
      const keys = off.redisKeysOf(key);
      const holder = await other.acquire(key);
      const burst = Array.from({ length: 10 }, () => off.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => lock.release()));
      await waitFor(async () => (await redis.zcard(keys.queue)) === 10, 10_000, 'ten places');
      await holder.release();
      await Promise.all(burst);
      expect(off.localHandOffs).toBe(0);
    } finally {
      await off.close();
    }
  });

  it('a burst of 50 waiters in one tick while another instance holds the key: one place in Redis, the rest follow its reply and ride behind it; all served in arrival order', async () => {
    const key = uniqueId('burst');
    const keys = provider.redisKeysOf(key);
    const holder = await other.acquire(key);
    const order: number[] = [];
    const burst = Array.from({ length: 50 }, (_, i) =>
      provider.acquire(key, { waitTimeoutMs: 20_000 }).then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    await waitFor(async () => (await redis.zcard(keys.queue)) >= 1, 10_000, 'the first queued');
    await provider.ping(5000);
    expect(await redis.zcard(keys.queue)).toBe(1);
    await holder.release();
    await Promise.all(burst);
    expect(order).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  });
});
