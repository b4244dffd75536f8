import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { LockLostError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { waitFor } from '../support/timing';
import { ThrowawayRedis } from './support/throwaway-redis';
import { lockValueOf } from './support/lock-value';

/**
 * Held locks across a lost connection: after a Redis restart
 * without persistence every lock is gone from Redis; each holder must learn it
 * as soon as Redis answers again, not at its next renewal (lease / 3 later) while
 * a newcomer may already hold the key. And when the provider can no longer renew
 * a lock at all (the app's client gave up for good), its signal aborts then.
 */
const LEASE_MS = 30_000; // next renewal a third of it away: 10 s
/** The outcome bound: within ~2 s of Redis answering, far below lease / 3. */
const DETECTED_WITHIN_MS = 4000;

/** When `lock.signal` aborted (`performance.now()`), and why. */
function abortOf(lock: Lock): Promise<{ at: number; reason: unknown }> {
  return new Promise((resolve) => {
    if (lock.signal.aborted) resolve({ at: performance.now(), reason: lock.signal.reason });
    lock.signal.addEventListener('abort', () => resolve({ at: performance.now(), reason: lock.signal.reason }), { once: true });
  });
}

describe('RedisLockProvider: held locks when the connection is lost', () => {
  const providers: RedisLockProvider[] = [];
  const clients: Redis[] = [];
  let server: ThrowawayRedis;
  const make = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const provider = new RedisLockProvider({ url: server.url, keyPrefix: 'reconnect', leaseMs: LEASE_MS, ...options });
    providers.push(provider);
    return provider;
  };

  beforeEach(async () => {
    server = await ThrowawayRedis.create();
    await server.start();
  });

  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    for (const client of clients.splice(0)) client.disconnect();
    await server.kill();
  });

  it("after a restart without persistence, every held lock's signal aborts within ~2 s of Redis answering; a newcomer of another instance gets the key", async () => {
    const holder = make();
    const newcomer = make();
    const locks = await Promise.all(['restart:a', 'restart:b', 'restart:c'].map((key) => holder.acquire(key)));
    const aborted = locks.map(abortOf);
    await newcomer.tryAcquire('warm-up').then((lock) => lock?.release());

    await server.kill();
    // Long enough for the client's reconnect back-off to grow.
    await waitFor(() => holder.client.status === 'reconnecting', 10_000, 'the holder to notice the outage');
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await server.start(); // empty: the locks are gone with the data
    const answeredAt = performance.now();

    const taken = await newcomer.acquire('restart:a', { waitTimeoutMs: 20_000 });
    const takenAt = performance.now();
    const results = await Promise.all(aborted);
    const detectedAfter = results.map((r) => Math.round(r.at - answeredAt));
    expect(results.map((r) => r.reason)).toEqual(locks.map(() => expect.any(LockLostError)));
    expect(detectedAfter.filter((ms) => ms >= DETECTED_WITHIN_MS)).toEqual([]);
    // The first holder knew it had lost the key by the time the newcomer held it, or within the bound.
    expect(results[0].at <= takenAt || results[0].at - answeredAt < DETECTED_WITHIN_MS).toBe(true);
    expect(taken.fencingToken).toBeGreaterThan(locks[0].fencingToken);
    // The old holder's releases leave the newcomer alone.
    await Promise.all(locks.map((lock) => lock.release().catch(() => undefined)));
    const inspector = new Redis(server.url);
    clients.push(inspector);
    expect(await inspector.get(newcomer.redisKeysOf('restart:a').lock)).toBe(lockValueOf(taken));
    await taken.release();
  }, 60_000);

  it('re-checks a held lock at once on reconnect: one that survived (connection dropped, data kept) is renewed and stays held', async () => {
    const holder = make();
    const lock = await holder.acquire('survivor');
    const lockKey = holder.redisKeysOf('survivor').lock;
    const inspector = new Redis(server.url);
    clients.push(inspector);
    await waitFor(async () => (await inspector.pttl(lockKey)) < LEASE_MS - 3000, 10_000, 'the lease to run down a little');
    // Drop the holder's connection only: Redis and its data stay.
    await inspector.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    // Renewed on reconnect, long before its next scheduled renewal (lease / 3 = 10 s).
    await waitFor(async () => (await inspector.pttl(lockKey)) > LEASE_MS - 2000, DETECTED_WITHIN_MS, 'the re-check to renew the lease');
    expect(lock.signal.aborted).toBe(false);
    expect(await inspector.get(lockKey)).toBe(lockValueOf(lock));
    await lock.release();
  }, 30_000);

  it("aborts a held lock's signal as soon as the app's own client gives up reconnecting, not at the lease end", async () => {
    const client = new Redis(server.url, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    clients.push(client);
    const provider = make({ url: undefined, client });
    const lock = await provider.acquire('client-gone');
    const aborted = abortOf(lock);
    await server.kill();
    const killedAt = performance.now();
    const { at, reason } = await aborted;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(at - killedAt).toBeLessThan(DETECTED_WITHIN_MS);
    await lock.release().catch(() => undefined);
  }, 60_000);
});
