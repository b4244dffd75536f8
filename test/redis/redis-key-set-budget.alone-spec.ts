import { Redis } from 'ioredis';
import { LockBusyError, LockService, RedisLockProvider } from 'nestjs-serialized';
import { uniqueId, waitFor } from '../support/timing';
import { ThrowawayRedis } from './support/throwaway-redis';

/** Script calls Redis ran since the last `CONFIG RESETSTAT` (INFO commandstats: EVALSHA and EVAL). */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) total += Number(match[2]);
  return total;
}

/**
 * Performance budgets, not behaviour: how many script calls (each one round trip)
 * the Redis driver sends to take a key set on a standalone server, counted by INFO
 * commandstats on a private server. Run alone, after the rest, like
 * test/redis/redis-command-budget.alone-spec.ts.
 */
describe('Redis key-set script calls (a budget suite, not a functional one)', () => {
  let server: ThrowawayRedis;
  let admin: Redis;
  const open: RedisLockProvider[] = [];
  beforeAll(async () => {
    server = await ThrowawayRedis.create();
    await server.start();
    admin = new Redis(server.url);
  }, 60_000);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((provider) => provider.close()));
  });
  afterAll(async () => {
    await admin.quit();
    await server.kill();
  });
  const make = (keyPrefix: string): RedisLockProvider => {
    const provider = new RedisLockProvider({ url: server.url, keyPrefix });
    open.push(provider);
    return provider;
  };

  it('an uncontended set of 2, 3 or 16 keys is taken with 1 script call (not one per key), tokens growing per key', async () => {
    const provider = make(uniqueId('set-count'));
    const locks = new LockService(provider);
    // Scripts loaded (the set's too) and connections up before counting.
    await (await provider.acquire('load')).release();
    await locks.run(['load-a', 'load-b'], () => undefined);
    await waitFor(() => provider.heldLocks === 0, 10_000, 'the loading set released');
    const last = new Map<string, bigint>();
    for (const size of [2, 3, 16, 2, 2]) {
      const keys = Array.from({ length: size }, (_, i) => `k${i}`);
      await admin.config('RESETSTAT');
      const calls = await locks.run(keys, async (held) => {
        for (const lock of held) {
          expect(lock.fencingToken > (last.get(lock.key) ?? 0n)).toBe(true);
          last.set(lock.key, lock.fencingToken);
        }
        return scriptCalls(admin);
      });
      expect({ size, calls }).toEqual({ size, calls: 1 });
      await waitFor(() => provider.heldLocks === 0, 10_000, 'the set released');
    }
  });

  it('a key held by another instance: the one call takes nothing, and the set goes key by key', async () => {
    const keyPrefix = uniqueId('set-busy');
    const other = make(keyPrefix);
    const provider = make(keyPrefix);
    const locks = new LockService(provider);
    await (await provider.acquire('load')).release();
    await locks.run(['load-a', 'load-b'], () => undefined);
    await waitFor(() => provider.heldLocks === 0, 10_000, 'the loading set released');
    const held = await other.acquire('b');
    await admin.config('RESETSTAT');
    await expect(locks.run(['a', 'b'], () => 'ran', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
    expect(await scriptCalls(admin)).toBeGreaterThanOrEqual(2);
    // Nothing of the set is held: the other instance finds `a` free at once.
    const a = await other.tryAcquire('a');
    expect(a).not.toBeNull();
    await a!.release();
    await held.release();
    await waitFor(() => provider.heldLocks === 0, 10_000, 'the set released');
    await admin.config('RESETSTAT');
    await expect(locks.run(['a', 'b'], () => scriptCalls(admin))).resolves.toBe(1);
  });
});
