import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';
import { lockValue, ownerIn } from './support/lock-value';

/**
 * Several real OS processes sharing one Redis: exclusion, global arrival order,
 * fencing, and what happens when a holder or a waiter is SIGKILLed.
 */
const WORKER = 'test/redis/workers/lock.worker.ts';
const LEASE_MS = 1000;
const HEARTBEAT_MS = 1500;

describe('RedisLockProvider across OS processes', () => {
  const prefix = uniqueId('multiprocess');
  let redis: Redis;
  let local: RedisLockProvider;

  // Processes start slowly (ts-node), so one pool serves the whole suite: the
  // first four are never killed, each crash test kills one of the others.
  let all: WorkerProcess[] = [];
  let pool: WorkerProcess[] = [];
  let spare: WorkerProcess[] = [];
  const startWorkers = (count: number): WorkerProcess[] =>
    Array.from({ length: count }, (_, i) =>
      WorkerProcess.start(`worker-${i}`, WORKER, {
        REDIS_URL: TEST_REDIS_URL,
        KEY_PREFIX: prefix,
        LEASE_MS: String(LEASE_MS),
        HEARTBEAT_MS: String(HEARTBEAT_MS),
      }),
    );
  const doomed = (): WorkerProcess => {
    const worker = spare.shift();
    if (!worker) throw new Error('no spare worker left for a crash test');
    return worker;
  };

  /** Waits until `count` waiters have their place in the Redis queue of `key`. */
  const queued = (key: string, count: number): Promise<void> =>
    waitFor(async () => (await redis.zcard(local.redisKeysOf(key).queue)) === count, 10_000, `${count} queued waiters of ${key}`);

  const acquired = (worker: WorkerProcess, id: string, timeoutMs = 20_000) =>
    worker.waitFor((m) => (m.type === 'acquired' || m.type === 'failed') && m.id === id, timeoutMs);

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    local = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS });
    all = startWorkers(7);
    pool = all.slice(0, 4);
    spare = all.slice(4);
    await Promise.all(all.map((w) => w.waitForType('ready', 120_000)));
  }, 150_000);

  afterAll(async () => {
    await Promise.all(all.map((w) => w.stop()));
    await local.close();
    // Only this suite's keys: the shared Redis is never flushed.
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('4 processes x 250 read-modify-write sections on one key: exactly 1000, no overlap, fencing tokens strictly increasing', async () => {
    const group = pool;
    const names = {
      key: 'counter:shared',
      counterKey: `${prefix}-data:counter`,
      markerKey: `${prefix}-data:inside`,
      overlapKey: `${prefix}-data:overlaps`,
      tokensKey: `${prefix}-data:tokens`,
    };
    for (const worker of group) worker.send({ type: 'counter', rounds: 250, ...names });
    await Promise.all(group.map((w) => w.waitForType('counter-done', 120_000)));

    expect(Number(await redis.get(names.counterKey))).toBe(1000);
    expect(Number((await redis.get(names.overlapKey)) ?? 0)).toBe(0);
    const tokens = (await redis.lrange(names.tokensKey, 0, -1)).map(BigInt);
    expect(tokens).toHaveLength(1000);
    const outOfOrder = tokens.filter((token, i) => i > 0 && token <= tokens[i - 1]);
    expect(outOfOrder).toEqual([]);
    // Nothing left of the lock itself.
    const keys = local.redisKeysOf(names.key);
    expect(await redis.exists(keys.lock, keys.queue, keys.heartbeats)).toBe(0);
  }, 180_000);

  it('serves waiters of several processes in the order they reached Redis', async () => {
    const group = pool;
    const key = 'order:shared';
    const recordKey = `${prefix}-data:order`;
    const holder = await local.acquire(key);
    // Interleaved arrivals, two per process: w0 w1 w2 w3 w0 w1 w2 w3 ...
    const arrivals: string[] = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < group.length; i++) {
        const id = `w${i}-${round}`;
        group[i].send({ type: 'acquire', id, key, waitTimeoutMs: 30_000, hold: 0, recordKey });
        arrivals.push(id);
        await queued(key, arrivals.length);
      }
    }
    await holder.release();
    const results = await Promise.all(arrivals.map((id, n) => acquired(group[n % group.length], id)));
    expect(results.map((m) => m.type)).toEqual(arrivals.map(() => 'acquired'));
    expect(await redis.lrange(recordKey, 0, -1)).toEqual(arrivals);
    // Fencing follows the same order.
    const fences = results.map((m) => BigInt(m.fence as string));
    expect([...fences].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(fences);
  }, 120_000);

  it("hands a SIGKILLed holder's key to the next waiter within one lease", async () => {
    const holder = doomed();
    const waiter = pool[0];
    const key = 'crash:holder';
    holder.send({ type: 'acquire', id: 'holder-h', key, hold: -1 });
    const first = await acquired(holder, 'holder-h');
    expect(first.type).toBe('acquired');
    waiter.send({ type: 'acquire', id: 'holder-w', key, waitTimeoutMs: 20_000, hold: -1 });
    await queued(key, 1);
    // Let the dead holder's lease have been renewed at least once, so it is a live lease that runs out.
    await sleep(LEASE_MS / 2);

    const killedAt = Date.now();
    holder.kill('SIGKILL');
    await holder.exited;
    const next = await acquired(waiter, 'holder-w');
    const tookOverAfter = Date.now() - killedAt;

    expect(next.type).toBe('acquired');
    expect(BigInt(next.fence as string)).toBeGreaterThan(BigInt(first.fence as string));
    // Within one lease of the crash (plus scheduling slack for a loaded machine), far from the 20 s wait timeout.
    expect(tookOverAfter).toBeLessThan(LEASE_MS + 2500);
    waiter.send({ type: 'release', id: 'holder-w' });
    await waiter.waitFor((m) => m.type === 'released' && m.id === 'holder-w');
    expect(await local.tryAcquire(key).then((lock) => lock?.release().then(() => true))).toBe(true);
  }, 120_000);

  it('does not let a SIGKILLed waiter block the key (killed just before its turn)', async () => {
    const dying = doomed();
    const next = pool[1];
    const key = 'crash:waiter-at-turn';
    const holder = await local.acquire(key);
    dying.send({ type: 'acquire', id: 'turn-d', key, waitTimeoutMs: 30_000, hold: 0 });
    await queued(key, 1);
    next.send({ type: 'acquire', id: 'turn-n', key, waitTimeoutMs: 30_000, hold: -1 });
    await queued(key, 2);

    dying.kill('SIGKILL');
    await dying.exited;
    // Its heart-beat is still fresh: the key goes to the dead waiter, for at most min(lease, heartbeat).
    await holder.release();
    const result = await acquired(next, 'turn-n');
    expect(result.type).toBe('acquired');
    next.send({ type: 'release', id: 'turn-n' });
    await next.waitFor((m) => m.type === 'released' && m.id === 'turn-n');
    const keys = local.redisKeysOf(key);
    expect(await redis.exists(keys.lock, keys.queue, keys.heartbeats)).toBe(0);
  }, 120_000);

  it('drops a SIGKILLed waiter once its heart-beats stop, so the key passes straight to the next', async () => {
    const dying = doomed();
    const next = pool[2];
    const key = 'crash:waiter-dropped';
    const holder = await local.acquire(key, { leaseMs: 30_000 });
    dying.send({ type: 'acquire', id: 'drop-d', key, waitTimeoutMs: 30_000, hold: 0 });
    await queued(key, 1);
    next.send({ type: 'acquire', id: 'drop-n', key, waitTimeoutMs: 30_000, hold: -1 });
    await queued(key, 2);

    dying.kill('SIGKILL');
    await dying.exited;
    await sleep(HEARTBEAT_MS + 500);
    await holder.release();
    const ownerAfterRelease = await redis.get(local.redisKeysOf(key).lock);
    const result = await acquired(next, 'drop-n');
    expect(result.type).toBe('acquired');
    // The release skipped the dead waiter: the key went straight to the live one, and the key
    // names its fencing token (a heart-beat that raced the hand-off message reports the same one).
    expect(ownerIn(ownerAfterRelease)).toBe(result.token);
    expect(await redis.get(local.redisKeysOf(key).lock)).toBe(lockValue(result.token as string, result.fence as string));
    expect(await redis.zcard(local.redisKeysOf(key).queue)).toBe(0);
    next.send({ type: 'release', id: 'drop-n' });
    await next.waitFor((m) => m.type === 'released' && m.id === 'drop-n');
  }, 120_000);
});
