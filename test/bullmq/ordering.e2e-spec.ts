/**
 * Per-key order and mutual exclusion of `@Serialized('data.key')` BullMQ jobs
 * across two worker processes (one using the path form of the key, one the
 * function form), and parallelism across keys.
 */
import { byKey, maxRunning, overlapProblems, startSeqs, type TestJobData } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(180_000);

describe('BullMQ jobs with @Serialized: order and exclusion per key, across processes', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers({ concurrency: 4, keyForm: 'path' }, { concurrency: 4, keyForm: 'function' });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('runs 3 keys x 30 jobs one at a time per key, in enqueue order, spread over both processes', async () => {
    const keys = ['order-a', 'order-b', 'order-c'];
    const jobs: { data: TestJobData }[] = [];
    // Interleaved, with uneven durations, so that jobs of one key are picked by
    // different workers and processes at nearly the same time.
    for (let seq = 1; seq <= 30; seq++) {
      for (const key of keys) jobs.push({ data: { key, seq, durationMs: (seq * 7 + key.length * 3) % 25 } });
    }
    await harness.add(jobs);
    await harness.waitFinished(90);

    const events = (await harness.events()).filter((e) => keys.includes(e.key));
    const perKey = byKey(events);
    for (const key of keys) {
      const list = perKey.get(key) ?? [];
      expect({ key, problems: overlapProblems(list) }).toEqual({ key, problems: [] });
      expect({ key, starts: startSeqs(list) }).toEqual({ key, starts: Array.from({ length: 30 }, (_, i) => i + 1) });
      expect(list.filter((e) => e.e === 'end')).toHaveLength(30);
    }
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 90, failed: 0 });
    // Both processes did part of the work, and different keys ran side by side.
    expect(new Set(events.filter((e) => e.e === 'start').map((e) => e.pid)).size).toBe(2);
    expect(maxRunning(events)).toBeGreaterThanOrEqual(2);
    // Every key's order left Redis with its last job.
    expect(await harness.orderKeys()).toEqual([]);
  });

  it("runs jobs of different keys in parallel, up to the workers' concurrency", async () => {
    const keys = ['par-a', 'par-b', 'par-c', 'par-d', 'par-e', 'par-f'];
    // Each job keeps running until all six have started: only true parallelism ends them early.
    await harness.add(keys.map((key) => ({ data: { key, seq: 1, barrier: { group: 'par', starts: keys.length } } })));
    await harness.waitFinished(90 + keys.length, 120_000);

    const events = (await harness.events()).filter((e) => keys.includes(e.key));
    const firstEnd = events.findIndex((e) => e.e === 'end');
    expect(events.slice(0, firstEnd).filter((e) => e.e === 'start')).toHaveLength(6);
    expect(maxRunning(events)).toBe(6);
  });
});
