import { Redis } from 'ioredis';
import { type Lock, LockService, RedisLockProvider } from 'nestjs-serialized';
import { RedisScripts } from 'nestjs-serialized/providers/redis/protocol/redis.scripts';
import { deleteKeysWithPrefix } from '../redis/support/delete-keys';
import { listening } from '../redis/support/listening';
import { lockValue, lockValueOf } from '../redis/support/lock-value';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

/** The owner token a Redis lock holds the key under (a local hand-off's holder shares its tenure's). */
const ownerOf = (lock: Lock): string => (lock as unknown as { token: string }).token;

/**
 * The fencing token `LockService.inspect` lists for a Redis holder of another
 * instance: the one the lock key's value names ("<owner token> <fencing token>",
 * libs/serialized/src/providers/redis/protocol/lua/lock-value.lua), written by every
 * grant, renewal and release that keeps the key. After a local hand-off the value
 * still names the holder before, until the new holder's first renewal
 * (docs/observability.md, "Who holds my key?"). "Another instance" is another
 * provider: its own session and owner tokens (inspect-processes.e2e-spec.ts has one
 * in another OS process).
 */
describe('LockService.inspect: the fencing token of a Redis holder of another instance', () => {
  const prefix = uniqueId('inspect-tokens');
  let redis: Redis;
  let holders: RedisLockProvider;
  let others: RedisLockProvider;
  let observer: RedisLockProvider;
  let inspect: LockService['inspect'];
  /** What the observer lists for `key`'s holder: its fencing token and whose session it is. */
  const seen = async (key: string) => {
    const [holder, ...more] = (await inspect(key)).holders;
    expect(more).toEqual([]);
    return { fencingToken: holder?.fencingToken, here: holder?.here, instance: holder?.instance };
  };
  const sessionOf = (lock: Lock): string => ownerOf(lock).split(':')[0];

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    // Lease 1.5 s: a holder renews every half second.
    holders = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: 1500, maxLocalHandOffs: 4 });
    others = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    observer = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    const locks = new LockService(observer);
    inspect = (key) => locks.inspect(key);
    // Riders (this process's waiters served by local hand-offs) need the wake-up channel.
    await listening(holders, uniqueId('warm-up'));
  });

  afterAll(async () => {
    await Promise.all([holders.close(), others.close(), observer.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('after a grant: the holder’s token, at once', async () => {
    const key = uniqueId('grant');
    const lock = await others.acquire(key);
    expect(await seen(key)).toEqual({ fencingToken: lock.fencingToken, here: false, instance: sessionOf(lock) });
    expect(await redis.get(observer.redisKeysOf(key).lock)).toBe(lockValueOf(lock));
    await lock.release();
    expect((await inspect(key)).holders).toEqual([]);
  });

  it('after a hand-off in Redis (a release passing the key to a waiter of another instance): the new holder’s token, at once', async () => {
    const key = uniqueId('redis-handoff');
    const first = await others.acquire(key);
    const next = holders.acquire(key, { waitTimeoutMs: 20_000 });
    await waitFor(async () => (await redis.zcard(observer.redisKeysOf(key).queue)) === 1, 10_000, 'the waiter queued');
    await first.release();
    const second = await next;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await seen(key)).toEqual({ fencingToken: second.fencingToken, here: false, instance: sessionOf(second) });
    await second.release();
  });

  it('after a local hand-off: the token before it, until the new holder extends its lease', async () => {
    const key = uniqueId('local-extend');
    // A long lease: no renewal falls due while the test looks.
    const first = await holders.acquire(key, { leaseMs: 60_000 });
    const next = holders.acquire(key, { leaseMs: 60_000, waitTimeoutMs: 20_000 });
    await holders.ping(5000);
    await first.release();
    const second = await next;
    // Handed on in-process: the same owner token in Redis, the block's next fencing token.
    expect({ owner: ownerOf(second), token: second.fencingToken }).toEqual({ owner: ownerOf(first), token: first.fencingToken + 1n });
    expect(await seen(key)).toEqual({ fencingToken: first.fencingToken, here: false, instance: sessionOf(first) });
    await second.extend(60_000);
    expect(await seen(key)).toEqual({ fencingToken: second.fencingToken, here: false, instance: sessionOf(second) });
    await second.release();
  });

  it('after a local hand-off: the new holder’s token once its first renewal reached Redis', async () => {
    const key = uniqueId('local-renewal');
    const first = await holders.acquire(key);
    const next = holders.acquire(key, { waitTimeoutMs: 20_000 });
    await holders.ping(5000);
    await first.release();
    const second = await next;
    expect({ owner: ownerOf(second), token: second.fencingToken }).toEqual({ owner: ownerOf(first), token: first.fencingToken + 1n });
    // Nothing but its renewal (every half second; no extend, no other waiter) writes the key meanwhile.
    await waitFor(async () => (await seen(key)).fencingToken === second.fencingToken, 10_000, 'the renewal to name the new holder');
    expect(await redis.get(observer.redisKeysOf(key).lock)).toBe(lockValueOf(second));
    await second.release();
  });

  it('after riders outran the block: the refill reserving the next block names the holder it was sent under', async () => {
    const key = uniqueId('riders');
    const small = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, maxLocalHandOffs: 1 });
    try {
      await listening(small, uniqueId('warm-up'));
      const first = await small.acquire(key);
      // Block of two (first, then one local hand-off): the third waiter needs a fresh block.
      const waiting = [1, 2].map(() => small.acquire(key, { waitTimeoutMs: 20_000 }));
      await small.ping(5000);
      await first.release();
      const second = await waiting[0];
      expect(second.fencingToken).toBe(first.fencingToken + 1n);
      // Served with the last token of its block while a rider waits: the next block is reserved now,
      // by a release-with-keep that names the holder meanwhile (lease 30 s: no renewal meanwhile).
      await waitFor(async () => (await seen(key)).fencingToken === second.fencingToken, 10_000, 'the refill to name the holder');
      await second.release();
      const third = await waiting[1];
      expect(ownerOf(third)).toBe(ownerOf(first));
      expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
      await third.release();
    } finally {
      await small.close();
    }
  });

  /**
   * The scripts themselves, on a real Redis, where the provider's timing would
   * decide which runs: release.lua with `keep` (the key kept for riders once the
   * block is spent and no refill came back) names the new block's first token, the
   * next holder's; heartbeat.lua, asked about a holder whose hand-off message it
   * may not have read yet, reports the block that hand-off reserved and leaves the
   * value alone (one fencing token per grant, whichever of the two the holder's
   * process reads first: test/redis/redis-multiprocess.e2e-spec.ts met the other).
   */
  describe('the scripts that write the value', () => {
    const scripts = new RedisScripts({ heartbeatMs: 5000, channelPrefix: `${prefix}:wake:`, session: 'S1', block: 3 });
    const keysOf = (key: string) => observer.redisKeysOf(key);

    it('acquire.lua grants "<token> <fence>"; release.lua with keep names the kept block’s first, or the holder it is given', async () => {
      const keys = keysOf(uniqueId('keep'));
      const token = 'S1:30000:1.a';
      const granted = await scripts.acquire.run(redis, { keys, token, leaseMs: 30_000, mode: 'wait' });
      expect(granted.status).toBe('granted');
      expect(await redis.get(keys.lock)).toBe(lockValue(token, String(granted.fence)));

      const kept = await scripts.release.run(redis, keys, token, [], 30_000);
      expect(kept.kept?.fence).toBeGreaterThan(granted.fence);
      expect(await redis.get(keys.lock)).toBe(lockValue(token, String(kept.kept!.fence)));

      const refilled = await scripts.release.run(redis, keys, token, [], 30_000, BigInt(kept.kept!.fence) + 1n);
      expect(refilled.kept?.fence).toBeGreaterThan(kept.kept!.fence);
      expect(await redis.get(keys.lock)).toBe(lockValue(token, String(BigInt(kept.kept!.fence) + 1n)));

      expect(await scripts.extend.run(redis, keys.lock, token, 30_000, 12345n)).toBe(true);
      expect(await redis.get(keys.lock)).toBe(lockValue(token, '12345'));
      expect(await scripts.extend.run(redis, keys.lock, 'S1:30000:1.other', 30_000, 1n)).toBe(false);
      expect((await scripts.release.run(redis, keys, token)).status).toBe('released');
      expect(await redis.exists(keys.lock)).toBe(0);
    });

    it('heartbeat.lua reports the block the hand-off reserved for an owner whose message was not read', async () => {
      const keys = keysOf(uniqueId('missed'));
      const holder = 'S2:30000:1.h';
      const waiter = 'S1:30000:1.w';
      await scripts.acquire.run(redis, { keys, token: holder, leaseMs: 30_000, mode: 'wait' });
      const queued = await scripts.acquire.run(redis, { keys, token: waiter, leaseMs: 30_000, mode: 'wait' });
      expect(queued.status).toBe('queued');
      // The holder releases and the key passes to the waiter; this process does not read the message.
      const handed = await scripts.release.run(redis, keys, holder);
      expect(handed.handed?.member).toBe(waiter);
      expect(await redis.get(keys.lock)).toBe(lockValue(waiter, String(handed.handed!.fence)));
      const check = await scripts.heartbeat.run(redis, keys, [waiter]);
      expect(check.owner).toBe(waiter);
      expect(check.ownerBlock).toEqual({ fence: handed.handed!.fence, last: handed.handed!.last, floor: expect.anything() });
      expect(await redis.get(keys.lock)).toBe(lockValue(waiter, String(handed.handed!.fence)));
      // Asked again (its reply was lost too): still the same block, and no token drawn.
      const counter = await redis.get(keys.fence);
      expect((await scripts.heartbeat.run(redis, keys, [waiter])).ownerBlock.fence).toBe(handed.handed!.fence);
      expect(await redis.get(keys.fence)).toBe(counter);
      expect((await scripts.release.run(redis, keys, waiter)).status).toBe('released');
    });
  });
});
