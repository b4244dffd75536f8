import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * A rolling deploy: instances of the previous library version (protocol 1, the
 * scripts in support/protocol-1, as that version shipped them) and of this one
 * (protocol 2, local hand-off) share one Redis. They must never both hold a key.
 * Protocol 1 is played here by its own scripts, run raw, under its own session.
 */
const V1 = path.join(__dirname, 'support', 'protocol-1');
const v1 = (name: string): string => `${readFileSync(path.join(V1, 'common.lua'), 'utf8')}\n${readFileSync(path.join(V1, `${name}.lua`), 'utf8')}`;
const V1_ACQUIRE = v1('acquire');
const V1_RELEASE = v1('release');
const HEARTBEAT_MS = 5000;

describe('RedisLockProvider protocol 2 next to protocol 1 (rolling deploy)', () => {
  const prefix = uniqueId('protocol');
  const oldSession = 'protocol1session';
  let redis: Redis;
  let provider: RedisLockProvider;

  const keysOf = (key: string) => provider.redisKeysOf(key);
  const oldAcquire = async (key: string, token: string, mode: 'wait' | 'try'): Promise<{ status: number; fence: number }> => {
    const k = keysOf(key);
    const reply = (await redis.eval(V1_ACQUIRE, 4, k.lock, k.queue, k.heartbeats, k.fence, token, 30_000, mode, HEARTBEAT_MS, HEARTBEAT_MS, `${prefix}:wake:`, oldSession)) as number[];
    return { status: reply[0], fence: reply[1] };
  };
  const oldRelease = async (key: string, token: string): Promise<number> => {
    const k = keysOf(key);
    const reply = (await redis.eval(V1_RELEASE, 3, k.lock, k.queue, k.heartbeats, token, HEARTBEAT_MS, `${prefix}:wake:`, oldSession)) as number[];
    return reply[0];
  };

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, heartbeatMs: HEARTBEAT_MS, handoff: 'cohort' });
  });

  afterAll(async () => {
    await provider.close();
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('a protocol-1 holder keeps protocol-2 waiters out until it releases, then hands them the key with greater tokens', async () => {
    const key = 'old-holder';
    const oldToken = `${oldSession}:30000:1.old`;
    const held = await oldAcquire(key, oldToken, 'wait');
    expect(held.status).toBe(1);

    expect(await provider.tryAcquire(key)).toBeNull();
    const got: Lock[] = [];
    const first = provider.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => {
      got.push(lock);
      return lock;
    });
    const second = provider.acquire(key, { waitTimeoutMs: 20_000 }).then((lock) => {
      got.push(lock);
      return lock;
    });
    await waitFor(async () => (await redis.zcard(keysOf(key).queue)) === 2, 10_000, 'two protocol-2 waiters queued');
    // Both are queued behind the old holder, which still owns the key in Redis.
    expect(got).toHaveLength(0);
    expect(await redis.get(keysOf(key).lock)).toBe(oldToken);

    // The old release hands the key to the first new waiter, by a protocol-1 message.
    expect(await oldRelease(key, oldToken)).toBe(2);
    const a = await first;
    expect(a.fencingToken).toBeGreaterThan(BigInt(held.fence));
    expect(got).toHaveLength(1);
    // Whether the second waiter gets it in-process depends on what told this process of
    // the first grant (a protocol-1 message reserves no block; its safety check reserves a
    // fresh one): either way with a greater token.
    await a.release();
    const b = await second;
    expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
    await b.release();
    expect(await redis.exists(keysOf(key).lock, keysOf(key).queue)).toBe(0);
  });

  it('protocol-2 local holders keep a protocol-1 acquirer out, and hand it the key in its own message format', async () => {
    const key = 'new-holder';
    const oldToken = `${oldSession}:30000:2.old`;
    const sub = new Redis(TEST_REDIS_URL);
    const messages: string[] = [];
    sub.on('message', (_channel: string, message: string) => messages.push(message));
    await sub.subscribe(`${prefix}:wake:${oldSession}`);
    try {
      const holder = await provider.acquire(key);
      const locals = [provider.acquire(key), provider.acquire(key)];
      // They ride on the holder's tenure (no place in Redis) or, before this process
      // hears its channel, take places; either way the provider knows of them once it
      // has read the replies of what it sent before this ping (in order on its connection).
      await provider.ping(5000);
      expect(await redis.zcard(keysOf(key).queue)).toBeLessThanOrEqual(2);
      expect((await oldAcquire(key, oldToken, 'try')).status).toBe(-1);
      const queued = await oldAcquire(key, oldToken, 'wait');
      expect(queued.status).toBe(0);

      const before = provider.localHandOffs;
      await holder.release();
      const l1 = await locals[0];
      // Passed on in-process (cohort mode): the old waiter still waits, the Redis owner is this process's.
      expect(provider.localHandOffs).toBe(before + 1);
      expect((await oldAcquire(key, `${oldSession}:30000:3.probe`, 'try')).status).toBe(-1);
      await l1.release();
      const l2 = await locals[1];
      await l2.release();
      const fences = [holder.fencingToken, l1.fencingToken, l2.fencingToken];
      expect(fences[1]).toBeGreaterThan(fences[0]);
      expect(fences[2]).toBeGreaterThan(fences[1]);

      // The last release went to Redis and handed the key to the protocol-1 waiter.
      await waitFor(() => messages.length === 1, 10_000, 'the hand-off message to the protocol-1 waiter');
      const [member, fence, px, ...rest] = messages[0].split(' ');
      expect(member).toBe(oldToken);
      expect(rest).toEqual([]);
      expect(Number(px)).toBeGreaterThan(0);
      expect(BigInt(fence)).toBeGreaterThan(fences[2]);
      expect(await redis.get(keysOf(key).lock)).toBe(oldToken);
      expect(await provider.tryAcquire(key)).toBeNull();
      expect(await oldRelease(key, oldToken)).toBe(1);
      expect(await redis.exists(keysOf(key).lock, keysOf(key).queue)).toBe(0);
    } finally {
      await sub.quit();
    }
  });
});
