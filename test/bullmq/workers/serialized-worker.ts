/**
 * A worker process for the BullMQ suites: a Nest application context with a
 * `@Serialized` BullMQ processor, configured from the environment, recording
 * what it does in a Redis list (see support/job-log.ts) and over IPC.
 *
 * Job data: see `TestJobData`. `SCOPE` sets an explicit scope (shared with an HTTP handler);
 * `KEY_CONCURRENCY` the processor's `concurrency` (jobs of one key at once).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import { UnrecoverableError, type Job } from 'bullmq';
import Redis from 'ioredis';
import { Serialized, SerializedJobs, SerializedModule, type SerializationKey } from 'nestjs-serialized';
import type { JobEvent, TestJobData } from '../support/job-log';

const env = process.env;
const QUEUE = env.QUEUE_NAME!;
const LOG_KEY = env.LOG_KEY!;
const REDIS_URL = env.REDIS_URL!;
const KEY_CONCURRENCY = env.KEY_CONCURRENCY ? Number(env.KEY_CONCURRENCY) : undefined;

const log = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` for up to 60 s; then gives up silently (the test's assertions will tell). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !(await condition())) await sleep(20);
}

// Both forms of key, chosen per process: the suites run one of each side by side.
const KEY: SerializationKey = env.KEY_FORM === 'function' ? (job: Job<TestJobData>) => job.data.key : 'data.key';

async function record(job: Job<TestJobData>, e: JobEvent['e']): Promise<void> {
  const event: JobEvent = {
    e,
    key: job.data.key ?? '',
    seq: job.data.seq,
    id: String(job.id),
    attempt: job.attemptsMade,
    pid: process.pid,
    ...(KEY_CONCURRENCY === undefined ? {} : { limit: KEY_CONCURRENCY }),
  };
  await log.rpush(LOG_KEY, JSON.stringify(event));
  process.send?.({ type: e, ...event });
}

@Processor(QUEUE, {
  concurrency: Number(env.CONCURRENCY ?? 4),
  lockDuration: Number(env.LOCK_DURATION_MS ?? 30_000),
  stalledInterval: Number(env.STALLED_INTERVAL_MS ?? 30_000),
  maxStalledCount: Number(env.MAX_STALLED_COUNT ?? 1),
})
@SerializedJobs({ recheckMs: Number(env.RECHECK_MS ?? 10_000), lockRetryMs: 200 })
class TestProcessor extends WorkerHost {
  @Serialized(KEY, {
    ...(env.SCOPE ? { scope: env.SCOPE } : {}),
    ...(KEY_CONCURRENCY === undefined ? {} : { concurrency: KEY_CONCURRENCY }),
  })
  async process(job: Job<TestJobData>): Promise<{ seq: number }> {
    await record(job, 'start');
    const { durationMs = 0, slowOnceMs, failAttempts = 0, unrecoverable, waitForEndOf, barrier } = job.data;
    const firstRun = slowOnceMs !== undefined && (await log.set(`${LOG_KEY}:slow:${job.id}`, '1', 'NX')) === 'OK';
    await sleep(firstRun ? slowOnceMs! : durationMs);
    // Conditions instead of durations, so that no assertion depends on speed.
    if (barrier) {
      await log.incr(`${LOG_KEY}:barrier:${barrier.group}`);
      await until(async () => Number(await log.get(`${LOG_KEY}:barrier:${barrier.group}`)) >= barrier.starts);
    }
    if (waitForEndOf) {
      await until(async () =>
        (await log.lrange(LOG_KEY, 0, -1)).some((line) => {
          const event = JSON.parse(line) as JobEvent;
          return event.key === waitForEndOf && event.e === 'end';
        }),
      );
    }
    if (job.attemptsMade < failAttempts) {
      await record(job, 'fail');
      throw unrecoverable ? new UnrecoverableError(`job ${job.data.seq} gave up`) : new Error(`job ${job.data.seq} failed`);
    }
    await record(job, 'end');
    return { seq: job.data.seq };
  }
}

@Module({
  imports: [
    SerializedModule.forRoot({
      driver: (env.SERIALIZED_DRIVER as 'memory' | 'redis' | 'postgres' | undefined) ?? 'memory',
      redis: { url: REDIS_URL },
      ...(env.SERIALIZED_DRIVER === 'postgres' ? { postgres: { connectionString: env.DATABASE_URL } } : {}),
      ...(env.LOCK_KEY_PREFIX ? { keyPrefix: env.LOCK_KEY_PREFIX } : {}),
    }),
    BullModule.registerQueue({ name: QUEUE, prefix: env.QUEUE_PREFIX, connection: { url: REDIS_URL } }),
  ],
  providers: [TestProcessor],
})
class WorkerAppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerAppModule, { logger: ['error', 'warn'] });
  await app.init();
  await app.get(TestProcessor).worker.waitUntilReady();
  process.send?.({ type: 'ready', pid: process.pid });
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'close') return;
    void (async () => {
      await app.close();
      await log.quit();
      process.exit(0);
    })();
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
