import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { Idempotent, SerializedModule } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

@Injectable()
class PaymentJobs {
  runs = 0;

  @Idempotent({ key: 'data.paymentId' })
  async process(job: Job<{ paymentId: string; amount: number }>): Promise<{ paymentId: string; chargeId: string }> {
    this.runs++;
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { paymentId: job.data.paymentId, chargeId: randomUUID() };
  }
}

/**
 * `@Idempotent` on a BullMQ processor (real queue, real worker, Redis driver): two
 * jobs carrying one payment id run the processor once, and both complete with
 * its return value.
 */
describe('@Idempotent on a BullMQ processor', () => {
  const prefix = uniqueId('idembull');
  let moduleRef: TestingModule;
  let queue: Queue;
  let worker: Worker;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [SerializedModule.forRoot({ driver: 'redis', redis: { url: TEST_REDIS_URL }, keyPrefix: `${prefix}:locks` })],
      providers: [PaymentJobs],
    }).compile();
    await moduleRef.init();
    const jobs = moduleRef.get(PaymentJobs);
    queue = new Queue('payments', { connection: { url: TEST_REDIS_URL }, prefix });
    worker = new Worker('payments', (job) => jobs.process(job), { connection: { url: TEST_REDIS_URL }, prefix, concurrency: 4 });
  });
  afterAll(async () => {
    await worker.close();
    await queue.close();
    await moduleRef.close();
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it("runs the processor once per payment id; a duplicate job completes with the first one's return value", async () => {
    const jobs = moduleRef.get(PaymentJobs);
    const added = [
      await queue.add('pay', { paymentId: 'p-1', amount: 10 }),
      await queue.add('pay', { paymentId: 'p-1', amount: 10 }),
      await queue.add('pay', { paymentId: 'p-2', amount: 10 }),
    ];
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 3, 20_000, 'three completed jobs');
    const [a, b, c] = await Promise.all(added.map((job) => queue.getJob(job.id!)));
    expect(jobs.runs).toBe(2);
    expect(b!.returnvalue).toEqual(a!.returnvalue);
    expect(c!.returnvalue.chargeId).not.toBe(a!.returnvalue.chargeId);

    // A later duplicate too.
    const late = await queue.add('pay', { paymentId: 'p-1', amount: 10 });
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 4, 20_000, 'the late job completed');
    expect((await queue.getJob(late.id!))!.returnvalue).toEqual(a!.returnvalue);
    expect(jobs.runs).toBe(2);
  });
});
