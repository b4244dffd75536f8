import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * A waiter whose own event loop stalls past its hand-off lease must not run on
 * that hand-off (issue 10, item 1). Three real processes: H holds, W and X wait
 * (W first); W blocks its loop with a synchronous busy loop right after it
 * queued, H releases (the release makes W the owner for min(lease, heartbeatMs)
 * and publishes to W's process), W's short lease runs out, X is granted the key;
 * then W reads the stale message. W must not enter while X holds the key: it
 * confirms with Redis, learns the key is no longer its own, and waits again.
 */
const WORKER = 'test/redis/workers/lock.worker.ts';
const HEARTBEAT_MS = 2000; // the hand-off lease (leases are 30 s)
const STALL_MS = 6000; // three hand-off leases

describe('RedisLockProvider: a waiter whose event loop stalls past its hand-off', () => {
  const prefix = uniqueId('stalled-waiter');
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

  it('never runs on an expired hand-off: no overlap with the next holder, fencing tokens strictly increasing in the order sections ran', async () => {
    const [h, w, x] = workers;
    const key = 'stall:hand-off';
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
    w.send({ type: 'section', id: 'W', waitTimeoutMs: 60_000, ...names });
    await queued(1);
    x.send({ type: 'section', id: 'X', waitTimeoutMs: 60_000, ...names });
    await queued(2);

    w.send({ type: 'stall', ms: STALL_MS });
    await w.waitForType('stalling');
    await release(h, 'H');
    // The scenario holds: the release made the stalled W the owner.
    const wSession = (w.messages.find((m) => m.type === 'ready')!.session as string) + ':';
    expect(((await redis.get(keys.lock)) ?? '').startsWith(wSession)).toBe(true);

    // W's hand-off lease runs out during its stall and X is granted the key.
    expect(await section(x, 'X')).toMatchObject({ type: 'entered' });
    await w.waitForType('stalled', 60_000);
    // W now reads the stale message: it either enters (the defect) or waits again behind X.
    await waitFor(
      async () => w.messages.some((m) => m.id === 'W' && m.type !== 'released') || (await redis.zcard(keys.queue)) === 1,
      30_000,
      'W to enter or take a new place',
    );
    await release(x, 'X');
    // W ran after all, once X had released: it waited again rather than failing.
    expect(await section(w, 'W')).toMatchObject({ type: 'entered' });
    await release(w, 'W');

    const order = (await redis.lrange(names.orderKey, 0, -1)).map((entry) => entry.split(' '));
    const overlaps = Number((await redis.get(names.overlapKey)) ?? 0);
    const fences = order.map(([, fence]) => BigInt(fence));
    const notIncreasing = order.filter((_, i) => i > 0 && fences[i] <= fences[i - 1]).map((entry) => entry.join(' '));
    expect({ overlaps, ran: order.map(([id]) => id), notIncreasing }).toEqual({ overlaps: 0, ran: ['H', 'X', 'W'], notIncreasing: [] });
    expect(await redis.exists(keys.lock, keys.queue, keys.heartbeats)).toBe(0);
  }, 180_000);
});
