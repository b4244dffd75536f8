import { Redis } from 'ioredis';
import { LockBackendError, LockService, LockTimeoutError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { CpuHog } from './support/cpu-hog';
import { leftoverKeys } from './support/leftover-keys';

/**
 * A burst is overload, not an outage. Tens of thousands of acquisitions started at
 * once queue their scripts on the provider's one command connection; Redis is up
 * and answering all the while, so none of them may fail with LockBackendError (a
 * 503). Only the caller's own wait budget may end a wait (LockTimeoutError, 429),
 * and a caller that gives up leaves nothing behind in Redis.
 *
 * A small connect timeout (500 ms) makes the old per-command bound obvious: the
 * last scripts of such a burst wait far longer than that behind the others.
 *
 * Another process spins a core all along (a busy host): the time this
 * process is not running is not Redis being silent. The suite runs alone (an
 * `alone-spec`, after the parallel ones): it brings its own load, and beside
 * two other jest workers and that hog one CI run was starved twelve times over.
 */
const CONNECT_TIMEOUT_MS = 500;

describe('RedisLockProvider under a burst (overload is not an outage)', () => {
  let inspector: Redis;
  let hog: CpuHog;
  const providers: RedisLockProvider[] = [];
  const prefixes: string[] = [];
  const make = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const keyPrefix = uniqueId('burst');
    prefixes.push(keyPrefix);
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, connectTimeoutMs: CONNECT_TIMEOUT_MS, ...options });
    providers.push(provider);
    return provider;
  };
  const leftovers = (provider: RedisLockProvider, keyPrefix: string): Promise<string[]> => leftoverKeys(inspector, provider, keyPrefix);
  const outcomes = (results: PromiseSettledResult<unknown>[]): { ok: number; backend: number; timeout: number; other: unknown[] } => {
    const counted = { ok: 0, backend: 0, timeout: 0, other: [] as unknown[] };
    for (const result of results) {
      if (result.status === 'fulfilled') counted.ok++;
      else if (result.reason instanceof LockBackendError) counted.backend++;
      else if (result.reason instanceof LockTimeoutError) counted.timeout++;
      else counted.other.push(result.reason);
    }
    return counted;
  };

  beforeAll(async () => {
    inspector = new Redis(TEST_REDIS_URL);
    hog = await CpuHog.start();
  });
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await hog.stop();
    for (const keyPrefix of prefixes) {
      const counters = await inspector.keys(`${keyPrefix}:fence*`);
      if (counters.length) await inspector.del(...counters);
    }
    await inspector.quit();
  });

  it('30,000 acquisitions of distinct keys at once all complete: no LockBackendError while Redis answers', async () => {
    // A wait budget far beyond the burst: only the backend bound could fail a call.
    const provider = make({ waitTimeoutMs: 120_000 });
    const keyPrefix = prefixes[prefixes.length - 1];
    const locks = new LockService(provider);
    const total = 30_000;
    let ran = 0;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) calls.push(locks.run(`k${i}`, () => void ran++));
    const counted = outcomes(await Promise.allSettled(calls));

    expect(counted.other).toEqual([]);
    expect(counted.backend).toBe(0);
    expect(counted.timeout).toBe(0);
    expect(hog.running).toBe(true);
    expect(counted.ok).toBe(total);
    expect(ran).toBe(total);
    // run() resolves once its release is on its way (docs/semantics.md, "When run() resolves"): the last ones apply now.
    await waitFor(() => provider.heldLocks === 0, 30_000, 'the last releases to apply');
    expect(provider.heldLocks).toBe(0);
    expect(provider.waitingKeys).toBe(0);
    expect(await leftovers(provider, keyPrefix)).toEqual([]);
    // The jest bound covers the 120 s wait budget: on a starved host the burst is slow, never wrong.
  }, 180_000);

  it('waiters that give up during a burst get LockTimeoutError (never LockBackendError) and leave no trace in Redis', async () => {
    // The holders' lease outlasts any starved run of this test: a holder whose process
    // stalls past its lease rightly loses the key (test/redis/redis-stalled-holder.e2e-spec.ts
    // and the fault runs cover that); here a loss could only come from a waiter.
    const provider = make({ heartbeatMs: 3000, leaseMs: 120_000 });
    const keyPrefix = prefixes[prefixes.length - 1];
    const keys = 3000;
    const waitersPerKey = 7;
    // Every key is held for longer than any waiter waits, so every waiter must time
    // out: those whose place in the Redis queue was taken, and those whose script
    // was still queued on the connection when their budget ran out.
    const holders: Lock[] = await Promise.all(Array.from({ length: keys }, (_, k) => provider.acquire(`h${k}`)));
    const waiters: Promise<Lock>[] = [];
    for (let k = 0; k < keys; k++) {
      for (let j = 0; j < waitersPerKey; j++) waiters.push(provider.acquire(`h${k}`, { waitTimeoutMs: 300 }));
    }
    const counted = outcomes(await Promise.allSettled(waiters));
    expect(counted.other).toEqual([]);
    expect(counted.backend).toBe(0);
    expect(counted.ok).toBe(0);
    expect(counted.timeout).toBe(keys * waitersPerKey);

    // The holders still hold: nobody was handed a key by a waiter that left.
    const released = await Promise.allSettled(holders.map((lock) => lock.release()));
    expect(released.filter((r) => r.status === 'rejected')).toEqual([]);
    // Keys and reasons, not the locks: jest cannot print a lock's private maps.
    expect(holders.filter((lock) => lock.lost).map((lock) => `${lock.key}: ${lock.lost!.message}`)).toEqual([]);
    // Their places are given up behind the scenes: no queue, heart-beat or lock key stays.
    await waitFor(async () => (await leftovers(provider, keyPrefix)).length === 0, 15_000, 'every waiter to leave the Redis queue');
    expect(provider.waitingKeys).toBe(0);
    expect(provider.heldLocks).toBe(0);
  }, 60_000);
});
