import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * Riders behind a queued place, on a bad day: the process whose place they ride on
 * stalls past its hand-off lease. Three real processes: H holds; W queues W1 and
 * then W2 and W3, which ride behind W1's place (no places of their own); X queues
 * behind. W blocks its event loop; H releases (W1 becomes the owner for one
 * hand-off lease), the lease runs out during the stall and X is granted the key.
 * When W's loop turns again, W1's hand-off is stale: W1 must not run while X holds
 * the key, and its riders must neither run on it nor be stranded — they take places
 * of their own, and all of W's sections run after X, one at a time.
 */
const WORKER = 'test/redis/workers/lock.worker.ts';
const HEARTBEAT_MS = 2000; // the hand-off lease (leases are 30 s)
const STALL_MS = 6000; // three hand-off leases

describe('RedisLockProvider: riders behind a place whose process stalls past its hand-off', () => {
  const prefix = uniqueId('stalled-riders');
  let redis: Redis;
  let local: RedisLockProvider;
  let workers: WorkerProcess[] = [];

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    // Only to name the Redis keys; it never takes a lock.
    local = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    workers = ['H', 'W', 'X'].map((name) =>
      WorkerProcess.start(name, WORKER, { REDIS_URL: TEST_REDIS_URL, KEY_PREFIX: prefix, LEASE_MS: '30000', HEARTBEAT_MS: String(HEARTBEAT_MS) }),
    );
    await Promise.all(workers.map((w) => w.waitForType('ready', 120_000)));
  }, 150_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await local.close();
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('no rider runs on the stale hand-off or is stranded: H, X, then W1-W3 one at a time, fencing tokens increasing', async () => {
    const [h, w, x] = workers;
    const key = 'stall:riders';
    const keys = local.redisKeysOf(key);
    const names = { key, insideKey: `${prefix}-data:inside`, overlapKey: `${prefix}-data:overlaps`, orderKey: `${prefix}-data:order` };
    const queued = (count: number): Promise<void> =>
      waitFor(async () => (await redis.zcard(keys.queue)) === count, 20_000, `${count} queued waiters`);
    const section = (worker: WorkerProcess, id: string): Promise<WorkerMessage> =>
      worker.waitFor((m) => (m.type === 'entered' || m.type === 'failed') && m.id === id, 60_000);
    const release = async (worker: WorkerProcess, id: string): Promise<void> => {
      worker.send({ type: 'release', id });
      await worker.waitFor((m) => m.type === 'released' && m.id === id, 30_000);
    };

    h.send({ type: 'section', id: 'H', ...names });
    expect(await section(h, 'H')).toMatchObject({ type: 'entered' });
    w.send({ type: 'section', id: 'W1', waitTimeoutMs: 60_000, ...names });
    await queued(1);
    // W hears its wake-up channel once W1 has a place (riders need it).
    await sleep(300);
    w.send({ type: 'section', id: 'W2', waitTimeoutMs: 60_000, ...names });
    w.send({ type: 'section', id: 'W3', waitTimeoutMs: 60_000, ...names });
    await sleep(300);
    // They ride behind W1's place: still one place in Redis.
    expect(await redis.zcard(keys.queue)).toBe(1);
    x.send({ type: 'section', id: 'X', waitTimeoutMs: 60_000, ...names });
    await queued(2);

    w.send({ type: 'stall', ms: STALL_MS });
    await w.waitForType('stalling');
    await release(h, 'H');
    // W1's hand-off lease runs out during the stall and X is granted the key.
    expect(await section(x, 'X')).toMatchObject({ type: 'entered' });
    await w.waitForType('stalled', 60_000);
    // W reads the stale message: W1 waits again; W2 and W3 take places of their own.
    await queued(3);
    await release(x, 'X');
    for (let i = 0; i < 3; i++) {
      const next = await w.waitFor((m) => (m.type === 'entered' || m.type === 'failed') && !w.messages.some((r) => r.type === 'released' && r.id === m.id), 60_000);
      expect(next).toMatchObject({ type: 'entered' });
      await release(w, next.id as string);
    }

    const order = (await redis.lrange(names.orderKey, 0, -1)).map((entry) => entry.split(' '));
    const overlaps = Number((await redis.get(names.overlapKey)) ?? 0);
    const fences = order.map(([, fence]) => BigInt(fence));
    const notIncreasing = order.filter((_, i) => i > 0 && fences[i] <= fences[i - 1]).map((entry) => entry.join(' '));
    const ran = order.map(([id]) => id);
    expect({ overlaps, first: ran.slice(0, 2), rest: [...ran.slice(2)].sort(), notIncreasing }).toEqual({
      overlaps: 0, first: ['H', 'X'], rest: ['W1', 'W2', 'W3'], notIncreasing: [],
    });
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  }, 180_000);
});
