/**
 * A job and an HTTP handler that share an explicit `scope` and key value exclude
 * each other: the job holds the app's real lock while it runs, and takes it
 * without blocking its worker slot (a busy lock parks the job for `lockRetryMs`).
 * In-memory driver: job and handler in one process. Redis driver: the handler in
 * this process, the jobs in two worker processes.
 */
import { Controller, Module, Param, Post, Query, type INestApplication, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { BullModule, Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import request from 'supertest';
import { Serialized, SerializedJobs, SerializedModule } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { overlapProblems, type JobEvent, type TestJobData } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(180_000);

const HTTP_MS = 1200;
const JOB_MS = 1200;

/** Builds an app whose handler (and, with `withProcessor`, BullMQ processor) log to `harness`. */
async function createApp(
  harness: QueueHarness,
  driver: 'memory' | 'redis',
  scope: string,
  withProcessor: boolean,
): Promise<INestApplication> {
  const record = async (event: Omit<JobEvent, 'pid' | 'attempt'>): Promise<void> => {
    await harness.redis.rpush(harness.logKey, JSON.stringify({ ...event, attempt: 0, pid: process.pid }));
  };

  @Controller()
  class SlowController {
    /** Holds the key `HTTP_MS`, or with `?until=<key>` until a job of that other key has ended. */
    @Post('users/:userId/slow')
    @Serialized('userId', { scope })
    async slow(@Param('userId') userId: string, @Query('until') until?: string): Promise<{ ok: true }> {
      await record({ e: 'start', key: userId, seq: 0, id: 'http' });
      if (until) {
        await waitFor(async () => (await eventsOf(harness, until)).some((e) => e.e === 'end'), 60_000, `a job of ${until} to end`).catch(
          () => undefined,
        );
      } else {
        await sleep(HTTP_MS);
      }
      await record({ e: 'end', key: userId, seq: 0, id: 'http' });
      return { ok: true };
    }
  }

  @Processor(harness.name, { concurrency: 2 })
  @SerializedJobs({ lockRetryMs: 100 })
  class InProcessProcessor extends WorkerHost {
    @Serialized('data.key', { scope })
    async process(job: Job<TestJobData>): Promise<void> {
      await record({ e: 'start', key: job.data.key!, seq: job.data.seq, id: String(job.id) });
      await sleep(job.data.durationMs ?? 0);
      await record({ e: 'end', key: job.data.key!, seq: job.data.seq, id: String(job.id) });
    }
  }

  @Module({
    imports: [
      SerializedModule.forRoot({ driver, redis: { url: TEST_REDIS_URL }, waitTimeoutMs: 30_000 }),
      ...(withProcessor
        ? [BullModule.registerQueue({ name: harness.name, prefix: harness.prefix, connection: { url: TEST_REDIS_URL } })]
        : []),
    ],
    controllers: [SlowController],
    providers: withProcessor ? [InProcessProcessor as Type] : [],
  })
  class AppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
  await app.init();
  if (withProcessor) await app.get(InProcessProcessor).worker.waitUntilReady();
  return app;
}

async function eventsOf(harness: QueueHarness, user: string): Promise<JobEvent[]> {
  return (await harness.events()).filter((e) => e.key === user);
}

describe.each(['memory', 'redis'] as const)('BullMQ jobs and HTTP handlers sharing a scope (%s driver)', (driver) => {
  let harness: QueueHarness;
  let app: INestApplication;

  beforeAll(async () => {
    harness = new QueueHarness();
    const scope = uniqueId('shared');
    if (driver === 'redis') await harness.startWorkers({ driver, scope, concurrency: 2 }, { driver, scope, concurrency: 2 });
    app = await createApp(harness, driver, scope, driver === 'memory');
  });

  afterAll(async () => {
    await app?.close();
    await harness?.close();
  });

  it('parks a job while an HTTP handler holds its key, without holding back other keys, then runs it', async () => {
    // The handler holds u1 until u2's job has ended: u2 must not need u1's lock.
    const response = request(app.getHttpServer())
      .post('/users/u1/slow?until=u2')
      .then((r) => r);
    await waitFor(async () => (await eventsOf(harness, 'u1')).length > 0, 30_000, 'the handler to start');
    await harness.add([{ data: { key: 'u1', seq: 1, durationMs: 100 } }, { data: { key: 'u2', seq: 1, durationMs: 100 } }]);
    expect((await response).status).toBe(201);
    await harness.waitFinished(2);

    const u1 = await eventsOf(harness, 'u1');
    expect(overlapProblems(u1)).toEqual([]);
    expect(u1.map((e) => `${e.e}:${e.id === 'http' ? 'http' : 'job'}`)).toEqual(['start:http', 'end:http', 'start:job', 'end:job']);
    // The other user's job ran while the handler held u1.
    const all = await harness.events();
    const u2End = all.findIndex((e) => e.key === 'u2' && e.e === 'end');
    const httpEnd = all.findIndex((e) => e.key === 'u1' && e.e === 'end' && e.id === 'http');
    expect(u2End).toBeLessThan(httpEnd);
  });

  it('makes an HTTP request wait while a job of the same key runs', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    await harness.add([{ data: { key: 'u3', seq: 1, durationMs: JOB_MS } }]);
    await waitFor(async () => (await eventsOf(harness, 'u3')).length > 0, 30_000, 'the job to start');
    const response = await request(app.getHttpServer()).post('/users/u3/slow');
    expect(response.status).toBe(201);
    await harness.waitFinished(before.completed + before.failed + 1);

    const u3 = await eventsOf(harness, 'u3');
    expect(overlapProblems(u3)).toEqual([]);
    expect(u3.map((e) => `${e.e}:${e.id === 'http' ? 'http' : 'job'}`)).toEqual(['start:job', 'end:job', 'start:http', 'end:http']);
  });
});
