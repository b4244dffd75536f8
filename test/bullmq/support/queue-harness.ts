import { Queue, type JobsOptions } from 'bullmq';
import Redis from 'ioredis';
import { WorkerProcess } from '../../support/processes';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../support/services';
import { uniqueId, waitFor } from '../../support/timing';
import type { JobEvent, TestJobData } from './job-log';

export const WORKER_FILE = 'test/bullmq/workers/serialized-worker.ts';

/** Settings of a worker process (see workers/serialized-worker.ts). */
export interface WorkerSettings {
  concurrency?: number;
  keyForm?: 'path' | 'function';
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  maxStalledCount?: number;
  recheckMs?: number;
  driver?: 'memory' | 'redis' | 'postgres';
  /** `concurrency` of the processor's `@Serialized`: jobs of one key at once (default: none given, one). */
  keyConcurrency?: number;
  /** Explicit `scope` of the processor's `@Serialized`. */
  scope?: string;
  /** `keyPrefix` of the app's locks (default: the library's); see `QueueHarness.lockKeyPrefix`. */
  lockKeyPrefix?: string;
}

/**
 * One test's queue: a unique prefix (so nothing is shared with other suites or
 * other users of the Redis server), a producer, worker processes and the event log.
 * `close()` removes every key under the prefix; it never flushes the server.
 */
export class QueueHarness {
  readonly prefix = uniqueId('sertest');
  readonly name = 'jobs';
  readonly logKey = `${this.prefix}:log`;
  /** A `keyPrefix` for the workers' app locks under the queue's prefix, so that `close()` removes their Redis keys too. */
  readonly lockKeyPrefix = `${this.prefix}:locks`;
  readonly redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 3 });
  readonly queue = new Queue<TestJobData>(this.name, { connection: { url: TEST_REDIS_URL }, prefix: this.prefix });
  readonly workers: WorkerProcess[] = [];

  /** Starts worker processes and resolves when every one is ready. */
  async startWorkers(...settings: WorkerSettings[]): Promise<WorkerProcess[]> {
    const started = settings.map((s, i) =>
      WorkerProcess.start(`worker-${this.workers.length + i + 1}`, WORKER_FILE, {
        REDIS_URL: TEST_REDIS_URL,
        DATABASE_URL: TEST_DATABASE_URL,
        QUEUE_NAME: this.name,
        QUEUE_PREFIX: this.prefix,
        LOG_KEY: this.logKey,
        CONCURRENCY: String(s.concurrency ?? 4),
        KEY_FORM: s.keyForm ?? 'path',
        LOCK_DURATION_MS: String(s.lockDurationMs ?? 30_000),
        STALLED_INTERVAL_MS: String(s.stalledIntervalMs ?? 30_000),
        MAX_STALLED_COUNT: String(s.maxStalledCount ?? 1),
        RECHECK_MS: String(s.recheckMs ?? 10_000),
        SERIALIZED_DRIVER: s.driver ?? 'memory',
        SCOPE: s.scope ?? '',
        KEY_CONCURRENCY: s.keyConcurrency === undefined ? '' : String(s.keyConcurrency),
        LOCK_KEY_PREFIX: s.lockKeyPrefix ?? '',
      }),
    );
    this.workers.push(...started);
    await Promise.all(started.map((w) => w.waitForType('ready', 90_000)));
    return started;
  }

  /** Adds jobs one by one, as producers do (`queue.add(name, data)`), and returns their ids. */
  async add(jobs: readonly { data: TestJobData; opts?: JobsOptions }[]): Promise<string[]> {
    const ids: string[] = [];
    for (const { data, opts } of jobs) ids.push((await this.queue.add('work', data, opts)).id!);
    return ids;
  }

  /** Resolves when `count` jobs have finished (completed or failed for good). */
  async waitFinished(count: number, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        const counts = await this.queue.getJobCounts('completed', 'failed');
        return counts.completed + counts.failed >= count;
      },
      timeoutMs,
      `${count} finished jobs`,
    ).catch(async (error: Error) => {
      const counts = await this.queue.getJobCounts();
      throw new Error(
        `${error.message}; counts ${JSON.stringify(counts)}; worker stderr:\n${this.workers.map((w) => w.errors).join('\n')}`,
      );
    });
  }

  async events(): Promise<JobEvent[]> {
    return (await this.redis.lrange(this.logKey, 0, -1)).map((line) => JSON.parse(line) as JobEvent);
  }

  /** Keys of the per-key order still present (none once every job finished). */
  async orderKeys(): Promise<string[]> {
    return this.scan(`${this.prefix}:${this.name}:serialized:key:*`);
  }

  async close(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.child.exitCode !== null || w.child.signalCode !== null || !w.child.connected) return w.stop();
        w.send({ type: 'close' });
        const timer = setTimeout(() => w.kill(), 10_000);
        await w.exited;
        clearTimeout(timer);
      }),
    );
    await this.queue.close();
    const keys = await this.scan(`${this.prefix}:*`);
    for (let i = 0; i < keys.length; i += 500) await this.redis.del(...keys.slice(i, i + 500));
    await this.redis.quit();
  }

  private async scan(pattern: string): Promise<string[]> {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    return found;
  }
}
