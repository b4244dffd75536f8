import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { RedisLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';
import { lockValueOf } from './support/lock-value';

/**
 * A reply read after the lease it granted ran out never makes this process a
 * holder (docs/semantics.md): the lease counts from when the
 * request was sent, and a grant that may have run out is confirmed with Redis or
 * refused. The process stalls its own event loop (a synchronous burst) right
 * after sending, so Redis's reply waits unread past the lease. The other holder
 * is always another provider instance.
 */
const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a synchronous burst: replies wait unread meanwhile
  }
};

/**
 * Waits without letting this process read anything (a blocking child process per
 * look) until `lockKey` no longer names `owner` in Redis: a command this process sent
 * has been applied, and its reply waits unread. False after `ms`.
 */
const appliedWhileStalled = (lockKey: string, owner: string, ms: number): boolean => {
  const until = performance.now() + ms;
  const url = new URL(TEST_REDIS_URL);
  while (performance.now() < until) {
    const look = spawnSync('redis-cli', ['-h', url.hostname, '-p', url.port || '6379', '--raw', 'GET', lockKey], { encoding: 'utf8' });
    if (look.status === 0 && look.stdout.trim().split(' ')[0] !== owner) return true;
  }
  return false;
};

describe('RedisLockProvider: replies read after their lease ran out', () => {
  const prefix = uniqueId('late-replies');
  let redis: Redis;
  const providers: RedisLockProvider[] = [];
  const make = (options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, ...options });
    providers.push(provider);
    return provider;
  };
  /** Connected, scripts loaded: the next command goes out at once. */
  const warm = async (provider: RedisLockProvider): Promise<void> => {
    await provider.tryAcquire(uniqueId('warm-up')).then((lock) => lock?.release());
  };

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });

  afterAll(async () => {
    await Promise.all(providers.map((p) => p.close()));
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('tryAcquire: a grant whose lease ran out before its reply was read is refused (null); the key is free for another instance', async () => {
    const late = make();
    const other = make();
    await Promise.all([warm(late), warm(other)]);
    const attempt = late.tryAcquire('try', { leaseMs: 300 });
    busy(900);
    const lock = await attempt;
    const owner = await redis.get(late.redisKeysOf('try').lock);
    expect({ got: lock === null ? null : 'a lock', ownerInRedis: owner }).toEqual({ got: null, ownerInRedis: null });
    const next = await other.tryAcquire('try');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('acquire: a grant whose lease ran out before its reply was read is taken again, under a new token and a higher fencing token', async () => {
    const late = make();
    await warm(late);
    const before = await late.acquire('wait');
    await before.release();
    const attempt = late.acquire('wait', { leaseMs: 300, waitTimeoutMs: 10_000 });
    busy(900);
    const lock = await attempt;
    // It holds what Redis says it holds.
    expect(await redis.get(late.redisKeysOf('wait').lock)).toBe(lockValueOf(lock));
    expect(lock.fencingToken).toBeGreaterThan(before.fencingToken + 1n);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('release: a hand-off to a waiter of the same process, read after its lease ran out, does not run while another instance holds the key', async () => {
    // The release grants min(lease, heartbeatMs of the releasing side): 300 ms here. The
    // other instance shares this process and its stall, so its waiter's place must outlive it.
    // Local hand-off off: the hand-off to W must go through Redis (and its reply be read late).
    const releasing = make({ heartbeatMs: 300, maxLocalHandOffs: 0 });
    const other = make({ heartbeatMs: 5000 });
    await Promise.all([warm(releasing), warm(other)]);
    const key = 'hand-off';
    let inside = 0;
    let maxInside = 0;
    const ran: { who: string; fence: bigint }[] = [];
    const enter = (who: string) => (lock: Lock) => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      ran.push({ who, fence: lock.fencingToken });
      return lock;
    };
    const leave = async (lock: Lock): Promise<void> => {
      inside--;
      await lock.release();
    };
    const holder = await releasing.acquire(key);
    const w = releasing.acquire(key, { waitTimeoutMs: 20_000 }).then(enter('W'));
    await waitQueued(key, 1);
    // W's place: a hand-off run on it would run W under this owner token.
    const [wPlace] = await redis.zrange(releasing.redisKeysOf(key).queue, 0, 0);
    const x = other.acquire(key, { waitTimeoutMs: 20_000 }).then(enter('X'));
    await waitQueued(key, 2);

    const released = holder.release(); // its reply (W is the owner for 300 ms) must wait unread
    // Applied in Redis before the stall: a write left for a later turn would give W a fresh hand-off.
    const lockKey = releasing.redisKeysOf(key).lock;
    const holderToken = (holder as unknown as { token: string }).token;
    if (!appliedWhileStalled(lockKey, holderToken, 2000)) {
      await new Promise((resolve) => setImmediate(resolve)); // the write goes out; its reply cannot be here yet
      expect(appliedWhileStalled(lockKey, holderToken, 5000)).toBe(true);
    }
    busy(900);
    await released;
    const first = await Promise.race([w, x]);
    // Long enough for the other one to enter too, if it (wrongly) would.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await leave(first);
    await leave(await (ran[0].who === 'W' ? x : w));

    // The late hand-off did not run W: W ran under a new place (it was requeued), one at a
    // time beside X. Which of them ran first is not the point: X's own hand-off is capped at
    // the releasing side's 300 ms heart-beat, and when its confirmation takes longer X is
    // requeued behind W, and W rightly runs first.
    const wLock = await w;
    expect({
      maxInside,
      ran: ran.map((r) => r.who).sort(),
      wRanOnItsPlace: (wLock as unknown as { token: string }).token === wPlace,
    }).toEqual({
      maxInside: 1,
      ran: ['W', 'X'],
      wRanOnItsPlace: false,
    });
    expect(ran[1].fence).toBeGreaterThan(ran[0].fence);
  }, 30_000);

  const waitQueued = (key: string, count: number): Promise<void> =>
    waitFor(async () => (await redis.zcard(providers[0].redisKeysOf(key).queue)) === count, 10_000, `${count} queued waiters`);
});
