import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { uniqueId, waitFor } from '../support/timing';
import { commandsRun } from './support/commands-run';
import { listening } from './support/listening';
import { ThrowawayRedis } from './support/throwaway-redis';

/**
 * Performance budgets, not behaviour: how many Redis commands a hot key costs per
 * acquisition with local hand-off (riders on a tenure, riders on a queued place),
 * counted by INFO commandstats on a private server. Kept out of the functional
 * suites (test/redis/redis-local-handoff.e2e-spec.ts) and run alone, after the rest,
 * so that neither a budget nor a behaviour test fails for the other's reason. The
 * budgets are command counts, never times.
 */
describe('Redis command budgets of local hand-off (a budget suite, not a functional one)', () => {
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
      console.log(
        `riders: ${perAcquisition.toFixed(2)} Redis commands per acquisition, ${own.localHandOffs} local hand-offs of ${100 * rounds}`,
      );
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
});
