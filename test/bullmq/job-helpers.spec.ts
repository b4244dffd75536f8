/**
 * The small pure parts of the BullMQ support: options of `@SerializedJobs`, and
 * how the decorator tells a BullMQ job from any other first argument.
 */
import { Queue, Job, UnrecoverableError, DelayedError } from 'bullmq';
import { SerializedConfigError, SerializedJobs } from 'nestjs-serialized';
import { isBullmqJob } from 'nestjs-serialized/bullmq/bullmq-job.shape';
import { willRunAgain } from 'nestjs-serialized/bullmq/job-retry.policy';
import { serializedJobsOptionsOf } from 'nestjs-serialized/bullmq/serialized-jobs.decorator';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

describe('@SerializedJobs', () => {
  it("applies the method's options over the class's over the defaults", () => {
    @SerializedJobs({ recheckMs: 5000, lockRetryMs: 300 })
    class Processor {
      @SerializedJobs({ recheckMs: 2000 })
      process(): void {}
      other(): void {}
    }
    const instance = new Processor();
    expect(serializedJobsOptionsOf(Processor.prototype.process, instance)).toEqual({ recheckMs: 2000, lockRetryMs: 300 });
    expect(serializedJobsOptionsOf(Processor.prototype.other, instance)).toEqual({ recheckMs: 5000, lockRetryMs: 300 });
    expect(serializedJobsOptionsOf(Processor.prototype.other, {})).toEqual({ recheckMs: 10_000, lockRetryMs: 1000 });
  });

  it('rejects invalid values at decoration time, listing every problem', () => {
    expect(() => SerializedJobs({ recheckMs: 0, lockRetryMs: 1.5 })).toThrow(SerializedConfigError);
    expect(() => SerializedJobs({ recheckMs: 0, lockRetryMs: 1.5 })).toThrow(
      /@SerializedJobs: recheckMs=0 is invalid: accepts an integer number of milliseconds from 10 to 86400000 \(default 10000\)\n.*@SerializedJobs: lockRetryMs=1\.5 is invalid: accepts an integer number of milliseconds from 10 to 86400000 \(default 1000\)/,
    );
  });
});

describe('BullMQ job detection and retry policy', () => {
  const queue = new Queue(uniqueId('sertest-unit'), { connection: { url: TEST_REDIS_URL }, prefix: uniqueId('sertest-unit') });
  afterAll(() => queue.close());

  it('recognises a BullMQ job, and nothing else (duck-typed)', () => {
    expect(isBullmqJob(new Job(queue, 'work', { userId: 'u1' }, {}, '1'))).toBe(true);
    expect(isBullmqJob({ data: { userId: 'u1' } })).toBe(false);
    expect(isBullmqJob({ id: '1', data: {}, opts: {}, moveToDelayed() {}, promote() {} })).toBe(false);
    expect(isBullmqJob(null)).toBe(false);
    expect(isBullmqJob('1')).toBe(false);
  });

  it('predicts whether BullMQ will run a job again after its processor threw', () => {
    const job = (attemptsMade: number, attempts?: number) => Object.assign(new Job(queue, 'work', {}, { attempts }, '1'), { attemptsMade });
    expect(willRunAgain(job(0, 3), new Error('x'))).toBe(true);
    expect(willRunAgain(job(2, 3), new Error('x'))).toBe(false);
    expect(willRunAgain(job(0), new Error('x'))).toBe(false);
    expect(willRunAgain(job(0, 3), new UnrecoverableError('x'))).toBe(false);
    expect(willRunAgain(job(5), new DelayedError())).toBe(true);
    const discarded = job(0, 3);
    discarded.discard();
    expect(willRunAgain(discarded, new Error('x'))).toBe(false);
  });
});
