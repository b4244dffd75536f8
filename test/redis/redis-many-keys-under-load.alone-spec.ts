import { Redis } from 'ioredis';
import { LockBackendError, LockBusyError, LockService, LockTimeoutError, RedisLockProvider } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { CpuHog } from './support/cpu-hog';

/**
 * Overload is not an outage: 10,000 keys × 8 concurrent
 * acquisitions in one process, issued in one synchronous loop (80,000 calls
 * before the event loop turns once) while another process spins a core. Every
 * one of them runs, one at a time per key, with a wait budget that covers what
 * the host can do: the process's own slowness is never taken for a silent Redis
 * or a dead waiter (no LockBackendError, no lost place, no overlap).
 *
 * Not asserted here, because it is not met yet: all 80,000 within the default
 * 10 s budget. On this 2-core host the provider runs ≈ 3,000–4,500 acquisitions/s
 * beside the hog (one acquire and one release script per waiter), and the
 * default budget needs ≈ 8,000/s. See docs/BENCHMARKS.md for the rates this host reaches.
 */
const WAIT_BUDGET_MS = 120_000;
const KEYS = 10_000;
const PER_KEY = 8;

describe('RedisLockProvider: 10,000 keys × 8 in one synchronous loop beside a CPU hog', () => {
  let inspector: Redis;
  let hog: CpuHog;
  const keyPrefix = uniqueId('many-keys-load');

  beforeAll(async () => {
    inspector = new Redis(TEST_REDIS_URL);
    hog = await CpuHog.start();
  });
  afterAll(async () => {
    await hog.stop();
    const left = await inspector.keys(`${keyPrefix}:*`);
    if (left.length) await inspector.del(...left);
    await inspector.quit();
  });

  it('all 80,000 succeed (slower, not wrong), never two at once on a key', async () => {
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix, waitTimeoutMs: WAIT_BUDGET_MS });
    const locks = new LockService(provider);
    const inside = new Map<string, number>();
    let overlaps = 0;
    let ran = 0;
    const calls: Promise<unknown>[] = [];
    try {
      for (let k = 0; k < KEYS; k++) {
        const key = `k${k}`;
        for (let j = 0; j < PER_KEY; j++) {
          calls.push(
            locks.run(key, async () => {
              const now = (inside.get(key) ?? 0) + 1;
              inside.set(key, now);
              if (now > 1) overlaps++;
              await Promise.resolve();
              ran++;
              inside.set(key, now - 1);
            }),
          );
        }
      }
      const results = await Promise.allSettled(calls);
      const failures = { backend: 0, timeout: 0, busy: 0, other: [] as string[] };
      for (const result of results) {
        if (result.status === 'fulfilled') continue;
        const reason = result.reason as Error;
        if (reason instanceof LockBackendError) failures.backend++;
        else if (reason instanceof LockTimeoutError) failures.timeout++;
        else if (reason instanceof LockBusyError) failures.busy++;
        else if (failures.other.length < 5) failures.other.push(String(reason));
      }
      const firstFailure = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
      expect({ ...failures, first: firstFailure ? String(firstFailure.reason) : undefined }).toEqual({
        backend: 0,
        timeout: 0,
        busy: 0,
        other: [],
        first: undefined,
      });
      expect(hog.running).toBe(true);
      expect({ ran, overlaps }).toEqual({ ran: KEYS * PER_KEY, overlaps: 0 });
      // run() resolves once a release is issued, not when Redis answers it.
      await waitFor(() => provider.heldLocks === 0, 60_000, 'the last releases to apply');
      expect(provider.heldLocks).toBe(0);
    } finally {
      await provider.close();
    }
  }, 300_000);
});
