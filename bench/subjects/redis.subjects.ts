import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Mutex as RedisSemaphoreMutex, Semaphore as RedisSemaphore } from 'redis-semaphore';
import Redlock from 'redlock';
import { RedisLockProvider } from 'nestjs-serialized';
import { ensureLocalReplica } from '../lib/local-replica';
import { lockServiceSubject } from './memory.subjects';
import { nestedInSortedOrder, type LockSubject, type SubjectContext, type SubjectSpec } from './subject';

/** Lease every Redis contender uses (this library's default). */
export const LEASE_MS = 30_000;
/** How long a caller may wait for a busy key (this library's default `waitTimeoutMs`). */
export const WAIT_BUDGET_MS = 10_000;

/** A plain ioredis connection that fails fast instead of queueing forever while down. */
export function connectRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 3000, lazyConnect: false });
}

export const oursRedis: SubjectSpec = {
  id: 'ours',
  label: 'nestjs-serialized',
  kind: 'ours',
  backend: 'redis',
  settings: `new RedisLockProvider({ url, keyPrefix }) (lease ${LEASE_MS / 1000} s renewed, waitTimeoutMs ${WAIT_BUDGET_MS / 1000} s, defaults); LockService.run(key, fn)`,
  canWait: true,
  async open(context: SubjectContext): Promise<LockSubject> {
    return lockServiceSubject(new RedisLockProvider({ url: context.redisUrl, keyPrefix: `${context.prefix}:ours` }));
  },
};

/**
 * This library with local hand-off in cohort mode: scenario 3 only, reported under ids
 * of its own (`3.redis.cohort.*`) against the same peers.
 */
export const oursRedisCohort: SubjectSpec = {
  id: 'ours-cohort',
  label: "nestjs-serialized (handoff: 'cohort')",
  kind: 'ours',
  backend: 'redis',
  settings: `new RedisLockProvider({ url, keyPrefix, handoff: 'cohort' }) (up to 16 local hand-offs in a row, otherwise as ours); LockService.run(key, fn)`,
  canWait: true,
  async open(context: SubjectContext): Promise<LockSubject> {
    return lockServiceSubject(
      new RedisLockProvider({ url: context.redisUrl, keyPrefix: `${context.prefix}:ours-cohort`, handoff: 'cohort' }),
    );
  },
};

/**
 * This library with replica acknowledgements (`replicas: { acks: 1 }`): every grant and renewal
 * waits for `WAIT 1` on a local replica of the bench Redis (started for it). Scenarios
 * 1 and 3 only, reported under ids of their own (`<scenario>.redis.replicas.*`): the
 * cost of the acknowledgement, as a ratio to the rows of `ours`.
 */
export const oursRedisReplicas: SubjectSpec = {
  id: 'ours-replicas',
  label: 'nestjs-serialized (replicas: { acks: 1 })',
  kind: 'ours',
  backend: 'redis',
  settings: `new RedisLockProvider({ url, keyPrefix, replicas: { acks: 1, timeoutMs: 1000 } }) against a local replica of the bench Redis (otherwise as ours); LockService.run(key, fn)`,
  canWait: true,
  async open(context: SubjectContext): Promise<LockSubject> {
    await ensureLocalReplica(context.redisUrl);
    return lockServiceSubject(
      new RedisLockProvider({
        url: context.redisUrl,
        keyPrefix: `${context.prefix}:ours-replicas`,
        replicas: { acks: 1, timeoutMs: 1000 },
      }),
    );
  },
};

function redlockSubject(id: string, label: string, retryDelay: number, retryJitter: number): SubjectSpec {
  // Same wait budget as this library: redlock's default retryCount (10) would give up after ~2 s.
  const retryCount = Math.ceil(WAIT_BUDGET_MS / retryDelay);
  return {
    id,
    label,
    kind: 'peer',
    backend: 'redis',
    settings: `new Redlock([ioredis], { retryDelay: ${retryDelay}, retryJitter: ${retryJitter}, retryCount: ${retryCount} }) (= ${WAIT_BUDGET_MS / 1000} s wait budget); redlock.using([key], ${LEASE_MS}, fn) (auto-extension)`,
    canWait: true,
    async open(context: SubjectContext): Promise<LockSubject> {
      const client = connectRedis(context.redisUrl);
      const redlock = new Redlock([client], { retryDelay, retryJitter, retryCount });
      // Failed attempts on a busy key are reported as "error" events; they are expected here.
      redlock.on('error', () => undefined);
      return {
        withLock: (key, fn) => redlock.using([`${context.prefix}:redlock:${key}`], LEASE_MS, async () => fn()),
        // redlock's own multi-resource lock: every key in one attempt (one script call per attempt).
        withLocks: (keys, fn) =>
          redlock.using(
            keys.map((key) => `${context.prefix}:redlock:${key}`),
            LEASE_MS,
            async () => fn(),
          ),
        close: async () => void (await client.quit()),
      };
    },
  };
}

/** redlock 5 at its default retry delay (200 ms ± 100 ms jitter). */
export const redlockDefault = redlockSubject('redlock-200ms', 'redlock (retryDelay 200 ms, default)', 200, 100);
/** redlock 5 tuned for latency: 10 ms retry delay (jitter kept at half the delay, as its default ratio). */
export const redlock10 = redlockSubject('redlock-10ms', 'redlock (retryDelay 10 ms)', 10, 5);

export const redisSemaphore: SubjectSpec = {
  id: 'redis-semaphore',
  label: 'redis-semaphore (Mutex)',
  kind: 'peer',
  backend: 'redis',
  settings: `new Mutex(ioredis, key, { lockTimeout: ${LEASE_MS}, acquireTimeout: ${WAIT_BUDGET_MS}, retryInterval: 10 (default), refreshInterval: 24000 (default) }); acquire(); fn(); release()`,
  canWait: true,
  async open(context: SubjectContext): Promise<LockSubject> {
    const client = connectRedis(context.redisUrl);
    const withLock = async (key: string, fn: () => void | Promise<void>): Promise<void> => {
      const mutex = new RedisSemaphoreMutex(client, `${context.prefix}:rs:${key}`, {
        lockTimeout: LEASE_MS,
        acquireTimeout: WAIT_BUDGET_MS,
      });
      await mutex.acquire();
      try {
        await fn();
      } finally {
        await mutex.release();
      }
    };
    return {
      withLock,
      // No multi-key call: nested mutexes in sorted order, as its users write it.
      withLocks: (keys, fn) => nestedInSortedOrder(withLock, keys, fn),
      close: async () => void (await client.quit()),
    };
  },
};

/** Scenario 8: redis-semaphore's `Semaphore` (its N-at-a-time lock), set up as its `Mutex` above. */
export const redisSemaphoreSemaphore: SubjectSpec = {
  id: 'redis-semaphore-semaphore',
  label: 'redis-semaphore (Semaphore)',
  kind: 'peer',
  backend: 'redis',
  settings: `new Semaphore(ioredis, key, permits, { lockTimeout: ${LEASE_MS}, acquireTimeout: ${WAIT_BUDGET_MS}, retryInterval: 10 (default), refreshInterval: 24000 (default) }); acquire(); fn(); release()`,
  canWait: true,
  async open(context: SubjectContext): Promise<LockSubject> {
    const client = connectRedis(context.redisUrl);
    const withPermit = async (key: string, permits: number, fn: () => void | Promise<void>): Promise<void> => {
      const semaphore = new RedisSemaphore(client, `${context.prefix}:rss:${key}`, permits, {
        lockTimeout: LEASE_MS,
        acquireTimeout: WAIT_BUDGET_MS,
      });
      await semaphore.acquire();
      try {
        await fn();
      } finally {
        await semaphore.release();
      }
    };
    return {
      withLock: (key, fn) => withPermit(key, 1, fn),
      withPermit,
      close: async () => void (await client.quit()),
    };
  },
};

const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/**
 * The physical floor: one connection, `SET key token NX PX` then a Lua
 * compare-and-delete (EVALSHA) — the two round trips any safe Redis lock needs.
 * It cannot wait for a busy key, so it only runs uncontended.
 */
export const redisFloor: SubjectSpec = {
  id: 'floor',
  label: 'floor: SET NX PX + Lua delete',
  kind: 'floor',
  backend: 'redis',
  settings: `one ioredis connection; SET key <random token> NX PX ${LEASE_MS}; EVALSHA compare-and-delete`,
  canWait: false,
  async open(context: SubjectContext): Promise<LockSubject> {
    const client = connectRedis(context.redisUrl) as Redis & {
      compareAndDelete(key: string, token: string): Promise<number>;
    };
    client.defineCommand('compareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
    return {
      async withLock(key, fn) {
        const redisKey = `${context.prefix}:floor:${key}`;
        const token = randomBytes(16).toString('hex');
        if ((await client.set(redisKey, token, 'PX', LEASE_MS, 'NX')) !== 'OK') throw new Error(`floor: ${key} is busy`);
        try {
          await fn();
        } finally {
          await client.compareAndDelete(redisKey, token);
        }
      },
      close: async () => void (await client.quit()),
    };
  },
};

export const redisSubjects: SubjectSpec[] = [oursRedis, redlockDefault, redlock10, redisSemaphore, redisFloor];
