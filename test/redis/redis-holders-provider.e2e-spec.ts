import { Redis } from 'ioredis';
import { LockBackendError, LockBusyError, LockService, LockTimeoutError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

const errorOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/**
 * Several holders of one key on Redis, what one provider (and a second instance
 * sharing its Redis) sees: `maxPending`, timeouts, aborts and shutdown as for one
 * holder, fencing tokens shared with plain grants, and nothing left in Redis once
 * everyone left (so a plain caller finds the key free again on its one-round-trip path).
 */
describe('RedisLockProvider: several holders of one key, per caller', () => {
  const prefix = uniqueId('holders-provider');
  let redis: Redis;
  let a: RedisLockProvider;
  let b: RedisLockProvider;

  /** The key's Redis keys that exist now (the fencing counter aside). */
  const leftovers = async (key: string): Promise<string[]> => {
    const keys = a.redisKeysOf(key);
    const names = [keys.lock, keys.queue, keys.heartbeats, keys.holders, keys.shapes];
    const present = await Promise.all(names.map(async (name) => ((await redis.exists(name)) === 1 ? name : undefined)));
    return present.filter((name): name is string => name !== undefined);
  };

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
    a = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 2000 });
    b = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 2000 });
  });

  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('fencing tokens of shaped and plain grants of one key increase in grant order, and nothing is left once all leave', async () => {
    const key = uniqueId('tokens');
    const plain = await a.acquire(key);
    const waiting = [b.acquire(key, { concurrency: 2 }), a.acquire(key, { concurrency: 2 })];
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 2, 5000, 'two queued');
    await plain.release();
    const holders = await Promise.all(waiting);
    const writer = b.acquire(key);
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 1, 5000, 'writer queued');
    for (const lock of holders) await lock.release();
    const last = await writer;
    // The two shaped holders were granted together (in their order of arrival at Redis), between the plain ones.
    const group = holders.map((lock) => lock.fencingToken).sort((x, y) => (x < y ? -1 : 1));
    expect(group[0]).toBeGreaterThan(plain.fencingToken);
    expect(group[1]).toBeGreaterThan(group[0]);
    expect(last.fencingToken).toBeGreaterThan(group[1]);
    await last.release();
    expect(await leftovers(key)).toEqual([]);
  });

  it('maxPending bounds the waiters of this process: the one too many gets LockBusyError, the others get in', async () => {
    const key = uniqueId('pending');
    const held = await Promise.all([b.acquire(key, { concurrency: 2 }), b.acquire(key, { concurrency: 2 })]);
    const first = a.acquire(key, { concurrency: 2, maxPending: 1 });
    const second = errorOf(a.acquire(key, { concurrency: 2, maxPending: 1 }));
    const refused = await second;
    expect(refused).toBeInstanceOf(LockBusyError);
    expect((refused as LockBusyError).reason).toBe('max-pending');
    await held[0].release();
    const lock = await first;
    await lock.release();
    await held[1].release();
    expect(await leftovers(key)).toEqual([]);
  });

  it.each([
    ['a writer', 'a reader', {}, { shared: true }],
    ['a reader', 'a writer', { shared: true }, {}],
  ])('maxPending counts writers and readers of one key together: %s waits, %s too many is refused', async (_, __, first, second) => {
    const key = uniqueId('pending-mixed');
    const held = await b.acquire(key);
    const waiting = a.acquire(key, { ...first, maxPending: 1 });
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 1, 5000, 'the first waiter queued');
    const refused = await errorOf(a.acquire(key, { ...second, maxPending: 1 }));
    expect(refused).toBeInstanceOf(LockBusyError);
    expect((refused as LockBusyError).reason).toBe('max-pending');
    // Its place went with it: only the first waiter is queued.
    expect(await redis.zcard(a.redisKeysOf(key).queue)).toBe(1);
    await held.release();
    await (await waiting).release();
    expect(await leftovers(key)).toEqual([]);
  });

  it('a waiter times out (LockTimeoutError) and one aborted leaves at once; their places go, and the next waiter behind them gets in', async () => {
    const key = uniqueId('timeout');
    const reader = await b.acquire(key, { shared: true });
    const writer = errorOf(a.acquire(key, { waitTimeoutMs: 1500 }));
    const controller = new AbortController();
    // Of another instance: a second plain waiter of `a` would ride behind the first's place, without one of its own.
    const aborted = errorOf(b.acquire(key, { signal: controller.signal }));
    const behind = a.acquire(key, { shared: true, waitTimeoutMs: 10_000 });
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 3, 5000, 'three queued');
    controller.abort(new Error('caller left'));
    expect(((await aborted) as Error).message).toBe('caller left');
    expect(await writer).toBeInstanceOf(LockTimeoutError);
    // The queued writers left: the reader behind them joins the reader inside.
    const joined = await behind;
    expect(reader.signal.aborted).toBe(false);
    await joined.release();
    await reader.release();
    expect(await leftovers(key)).toEqual([]);
  });

  it('callers of one key with different limits: the smallest limit among the holders and the caller wins, in arrival order', async () => {
    const key = uniqueId('limits');
    const queue = a.redisKeysOf(key).queue;
    const first = await a.acquire(key, { concurrency: 3 });
    const second = await b.acquire(key, { concurrency: 3 });
    // Two hold: a caller of limit 2 has no room; one of limit 3 behind it waits its turn (it never passes a queued caller).
    let small: Lock | undefined;
    let large: Lock | undefined;
    const smallWait = a.acquire(key, { concurrency: 2 }).then((lock) => (small = lock));
    await waitFor(async () => (await redis.zcard(queue)) === 1, 5000, 'limit 2 queued');
    const largeWait = b.acquire(key, { concurrency: 3 }).then((lock) => (large = lock));
    await waitFor(async () => (await redis.zcard(queue)) === 2, 5000, 'limit 3 queued');
    expect(small).toBeUndefined();
    await first.release();
    await smallWait;
    // Two hold again, one of them of limit 2: the caller of limit 3 still has no room.
    await waitFor(async () => (await redis.zcard(queue)) === 1, 5000, 'limit 3 still queued');
    expect(large).toBeUndefined();
    await second.release();
    await largeWait;
    expect(large!.fencingToken).toBeGreaterThan(small!.fencingToken);
    await small!.release();
    await large!.release();
    expect(await leftovers(key)).toEqual([]);
  });

  it('inspect lists every holder of this process beside the others, each with its own token, readers marked shared', async () => {
    const locks = new LockService(a);
    const key = uniqueId('inspect');
    const readers = await Promise.all([a.acquire(key, { shared: true }), a.acquire(key, { shared: true })]);
    const info = await locks.inspect(key);
    expect(info.holders.map((h) => h.fencingToken).sort()).toEqual(readers.map((r) => r.fencingToken).sort());
    expect(info.holders.every((h) => h.here && h.shared === true)).toBe(true);
    for (const reader of readers) await reader.release();
    const group = await Promise.all([a.acquire(key, { concurrency: 2 }), a.acquire(key, { concurrency: 2 })]);
    const again = await locks.inspect(key);
    expect(again.holders).toHaveLength(2);
    expect(again.holders.every((h) => h.shared === false)).toBe(true);
    for (const lock of group) await lock.release();
    expect((await locks.inspect(key)).holders).toEqual([]);
  });

  it('tryAcquire: shared beside shared, never beside a plain holder, and never past a queued writer', async () => {
    const key = uniqueId('try');
    const reader = await a.tryAcquire(key, { shared: true });
    expect(reader).not.toBeNull();
    const second = await b.tryAcquire(key, { shared: true });
    expect(second).not.toBeNull();
    expect(await b.tryAcquire(key)).toBeNull();
    const writer = b.acquire(key);
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 1, 5000, 'writer queued');
    expect(await a.tryAcquire(key, { shared: true })).toBeNull();
    await reader!.release();
    await second!.release();
    const w = await writer;
    expect(await a.tryAcquire(key, { concurrency: 5 })).toBeNull();
    await w.release();
    const group = await a.tryAcquire(key, { concurrency: 5 });
    expect(group).not.toBeNull();
    await group!.release();
    expect(await leftovers(key)).toEqual([]);
  });

  it('LockService.run with concurrency on Redis: reentrancy inside, and an upgrade from shared fails at once', async () => {
    const locks = new LockService(a);
    const key = uniqueId('run');
    const seen: Lock[] = [];
    await locks.run(
      key,
      async (lock) => {
        seen.push(lock);
        await locks.run(key, async (inner) => void seen.push(inner), { concurrency: 2 });
      },
      { concurrency: 2 },
    );
    expect(seen[1]).toBe(seen[0]);
    const upgrade = await errorOf(locks.run(key, () => locks.run(key, async () => undefined), { shared: true }));
    expect((upgrade as Error).name).toBe('LockUpgradeError');
    expect(await leftovers(key)).toEqual([]);
  });

  it('shutdown: shaped waiters fail with LockBackendError, and holders release within the grace period', async () => {
    const own = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 2000, shutdownGraceMs: 2000 });
    const key = uniqueId('close');
    const holder = await b.acquire(key, { concurrency: 1 + 1 });
    const mine = await own.acquire(key, { concurrency: 2 });
    const waiting = errorOf(own.acquire(key, { concurrency: 2 }));
    await waitFor(async () => (await redis.zcard(a.redisKeysOf(key).queue)) === 1, 5000, 'one queued');
    const closed = own.close();
    expect(await waiting).toBeInstanceOf(LockBackendError);
    await mine.release();
    await closed;
    await holder.release();
    expect(await leftovers(key)).toEqual([]);
  });
});
