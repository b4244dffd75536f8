import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess, type WorkerMessage } from '../../support/processes';
import { TEST_REDIS_URL } from '../../support/services';
import { uniqueId, waitFor } from '../../support/timing';
import { deleteKeysWithPrefix } from './delete-keys';

const WORKER = 'test/redis/workers/lock.worker.ts';

/** What a section records: who ran, in which order, with which token, and whether two were inside at once. */
export interface SectionNames {
  key: string;
  insideKey: string;
  overlapKey: string;
  orderKey: string;
}

/**
 * Three real processes (H, W, X), each a `RedisLockProvider` in test/redis/workers/lock.worker.ts
 * with 30 s leases and the given heart-beat, on one key prefix: the set-up of the suites where one
 * process's event loop stalls while the others go on.
 */
export class ThreeLockWorkers {
  readonly redis = new Redis(TEST_REDIS_URL);
  /** Only to name the Redis keys; it never takes a lock. */
  readonly local: RedisLockProvider;
  readonly workers: [WorkerProcess, WorkerProcess, WorkerProcess];

  constructor(
    readonly prefix: string,
    heartbeatMs: number,
  ) {
    this.local = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    this.workers = (['H', 'W', 'X'] as const).map((name) =>
      WorkerProcess.start(name, WORKER, {
        REDIS_URL: TEST_REDIS_URL,
        KEY_PREFIX: prefix,
        LEASE_MS: '30000',
        HEARTBEAT_MS: String(heartbeatMs),
      }),
    ) as [WorkerProcess, WorkerProcess, WorkerProcess];
  }

  /** Starts them (call in `beforeAll`, with a long timeout: the children boot). */
  static async start(name: string, heartbeatMs: number): Promise<ThreeLockWorkers> {
    const scene = new ThreeLockWorkers(uniqueId(name), heartbeatMs);
    await Promise.all(scene.workers.map((w) => w.waitForType('ready', 120_000)));
    return scene;
  }

  keysOf(key: string): ReturnType<RedisLockProvider['redisKeysOf']> {
    return this.local.redisKeysOf(key);
  }

  names(key: string): SectionNames {
    return {
      key,
      insideKey: `${this.prefix}-data:inside`,
      overlapKey: `${this.prefix}-data:overlaps`,
      orderKey: `${this.prefix}-data:order`,
    };
  }

  queued(key: string, count: number): Promise<void> {
    return waitFor(async () => (await this.redis.zcard(this.keysOf(key).queue)) === count, 20_000, `${count} queued waiters`);
  }

  /** The worker's section `id` entered (or failed). */
  section(worker: WorkerProcess, id: string): Promise<WorkerMessage> {
    return worker.waitFor((m) => (m.type === 'entered' || m.type === 'failed') && m.id === id, 60_000);
  }

  async release(worker: WorkerProcess, id: string): Promise<void> {
    worker.send({ type: 'release', id });
    await worker.waitFor((m) => m.type === 'released' && m.id === id, 30_000);
  }

  /** Sections in the order they ran, overlaps counted, and the entries whose fencing token did not increase. */
  async outcome(names: SectionNames): Promise<{ overlaps: number; ran: string[]; notIncreasing: string[] }> {
    const order = (await this.redis.lrange(names.orderKey, 0, -1)).map((entry) => entry.split(' '));
    const overlaps = Number((await this.redis.get(names.overlapKey)) ?? 0);
    const fences = order.map(([, fence]) => BigInt(fence));
    const notIncreasing = order.filter((_, i) => i > 0 && fences[i] <= fences[i - 1]).map((entry) => entry.join(' '));
    return { overlaps, ran: order.map(([id]) => id), notIncreasing };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
    await this.local.close();
    await deleteKeysWithPrefix(this.redis, this.prefix);
    await this.redis.quit();
  }
}
