/**
 * A job waiting for its key must not hold a worker slot: with concurrency 2 and
 * ten jobs of user A queued before one job of user B, B runs at once instead of
 * after A's backlog. A worker that blocked on a lock inside `process()` would
 * fill both slots with A's jobs (one working, one waiting), and B would run only
 * near the end.
 */
import { byKey, overlapProblems, startSeqs, type TestJobData } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(180_000);

describe('BullMQ jobs with @Serialized: a waiting job never occupies a worker slot', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers({ concurrency: 2 });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("finishes user B's job while user A's backlog of 10 jobs is still at its first job", async () => {
    const jobs: { data: TestJobData }[] = [];
    // A's first job keeps its slot until B's job has ended (at most 60 s). B can only
    // end first if none of A's nine waiting jobs sits in the other slot.
    jobs.push({ data: { key: 'user-a', seq: 1, waitForEndOf: 'user-b' } });
    for (let seq = 2; seq <= 10; seq++) jobs.push({ data: { key: 'user-a', seq, durationMs: 200 } });
    jobs.push({ data: { key: 'user-b', seq: 1, durationMs: 200 } });
    await harness.add(jobs);
    await harness.waitFinished(11, 120_000);

    const events = await harness.events();
    const endOfB = events.findIndex((e) => e.key === 'user-b' && e.e === 'end');
    const endOfA1 = events.findIndex((e) => e.key === 'user-a' && e.e === 'end' && e.seq === 1);
    const endOfLastA = events.findIndex((e) => e.key === 'user-a' && e.e === 'end' && e.seq === 10);
    expect(endOfB).toBeGreaterThanOrEqual(0);
    expect(endOfB).toBeLessThan(endOfA1);
    expect(endOfB).toBeLessThan(endOfLastA);

    const a = byKey(events).get('user-a')!;
    expect(overlapProblems(a)).toEqual([]);
    expect(startSeqs(a)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 11, failed: 0 });
  });
});
