/**
 * Failures and retries keep the per-key order: a failed attempt that BullMQ
 * will retry keeps the head of its key (later jobs of the key wait for the
 * retry), and a job that fails for good hands the key on at once.
 */
import { byKey, overlapProblems, startSeqs } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(180_000);

describe('BullMQ jobs with @Serialized: retries and failures', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers({ concurrency: 3, keyForm: 'path' }, { concurrency: 3, keyForm: 'function' });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('runs every retry of a failing job before the later jobs of its key (attempts + backoff)', async () => {
    await harness.add([
      { data: { key: 'retry-k', seq: 1, durationMs: 50 } },
      { data: { key: 'retry-k', seq: 2, durationMs: 50, failAttempts: 2 }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 400 } } },
      { data: { key: 'retry-k', seq: 3, durationMs: 50 } },
      { data: { key: 'retry-k', seq: 4, durationMs: 50 } },
      // Retried at once (no backoff): straight back to the wait list.
      { data: { key: 'retry-k', seq: 5, durationMs: 50, failAttempts: 1 }, opts: { attempts: 2 } },
      { data: { key: 'retry-k', seq: 6, durationMs: 50 } },
    ]);
    await harness.waitFinished(6);

    const events = byKey(await harness.events()).get('retry-k')!;
    expect(overlapProblems(events)).toEqual([]);
    expect(startSeqs(events)).toEqual([1, 2, 2, 2, 3, 4, 5, 5, 6]);
    expect(events.filter((e) => e.e === 'fail').map((e) => `${e.seq}#${e.attempt}`)).toEqual(['2#0', '2#1', '5#0']);
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 6, failed: 0 });
    expect(await harness.orderKeys()).toEqual([]);
  });

  it('hands the key on when a job fails for good (attempts used up, UnrecoverableError)', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    const ids = await harness.add([
      { data: { key: 'fail-k', seq: 1, durationMs: 50 } },
      { data: { key: 'fail-k', seq: 2, durationMs: 50, failAttempts: 99 }, opts: { attempts: 2, backoff: { type: 'fixed', delay: 200 } } },
      { data: { key: 'fail-k', seq: 3, durationMs: 50 } },
      { data: { key: 'fail-k', seq: 4, durationMs: 50, failAttempts: 99, unrecoverable: true }, opts: { attempts: 5 } },
      { data: { key: 'fail-k', seq: 5, durationMs: 50 } },
    ]);
    await harness.waitFinished(before.completed + before.failed + 5);

    const events = byKey(await harness.events()).get('fail-k')!;
    expect(overlapProblems(events)).toEqual([]);
    expect(startSeqs(events)).toEqual([1, 2, 2, 3, 4, 5]);
    const states = await Promise.all(ids.map(async (id) => (await harness.queue.getJob(id))!.getState()));
    expect(states).toEqual(['completed', 'failed', 'completed', 'failed', 'completed']);
    expect(await harness.orderKeys()).toEqual([]);
  });

  it('fails a job without a key for good, naming the key and the method, and does not block others', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    const [noKey] = await harness.add([
      { data: { seq: 1, durationMs: 50 }, opts: { attempts: 3 } },
      { data: { key: 'after-missing', seq: 2, durationMs: 50 } },
    ]);
    await harness.waitFinished(before.completed + before.failed + 2);

    const job = (await harness.queue.getJob(noKey))!;
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    // Whichever process took it: the path form or the function form of the key.
    expect(job.failedReason).toMatch(
      /^Serialization key "(data\.key|function \(anonymous\))" is missing or empty .*\(in TestProcessor#process\)$/,
    );
    const events = await harness.events();
    expect(events.some((e) => e.seq === 1 && e.key === '')).toBe(false);
    expect(events.filter((e) => e.key === 'after-missing').map((e) => e.e)).toEqual(['start', 'end']);
  });
});
