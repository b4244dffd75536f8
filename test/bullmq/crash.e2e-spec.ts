/**
 * A worker process killed (SIGKILL) in the middle of a job of key K: K goes on
 * once BullMQ's stalled-job recovery has handed the job to another worker, and
 * still in order. Short `lockDuration`/`stalledInterval` keep the test short.
 */
import type { WorkerProcess } from '../support/processes';
import { byKey, overlapProblems, startSeqs, type JobEvent } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(180_000);

const FAST_STALLS = { lockDurationMs: 2000, stalledIntervalMs: 1000, concurrency: 2 } as const;

/** Adds K's jobs (the 3rd slow on its first run) and kills the process that starts the 3rd. */
async function killDuringThirdJob(harness: QueueHarness, key: string, workers: WorkerProcess[]): Promise<JobEvent> {
  await harness.add(
    [1, 2, 3, 4, 5, 6].map((seq) => ({ data: { key, seq, durationMs: 150, ...(seq === 3 ? { slowOnceMs: 20_000 } : {}) } })),
  );
  const started = await Promise.race(
    workers.map((w) => w.waitFor((m) => m.type === 'start' && m.key === key && m.seq === 3, 60_000).then(() => w)),
  );
  started.kill('SIGKILL');
  await started.exited;
  const victim = (await harness.events()).find((e) => e.key === key && e.seq === 3 && e.e === 'start')!;
  expect(victim.pid).toBe(started.pid);
  return victim;
}

describe('BullMQ jobs with @Serialized: a worker killed mid-job', () => {
  it('does not block its key beyond stalled-job recovery: the job re-runs elsewhere, then the rest in order', async () => {
    const harness = new QueueHarness();
    try {
      const workers = await harness.startWorkers(FAST_STALLS, FAST_STALLS);
      const victim = await killDuringThirdJob(harness, 'crash-k', workers);
      await harness.waitFinished(6, 90_000);

      const events = byKey(await harness.events()).get('crash-k')!;
      expect(overlapProblems(events, [victim])).toEqual([]);
      // The killed run of job 3, then its re-run by the surviving process, then 4, 5, 6.
      expect(startSeqs(events)).toEqual([1, 2, 3, 3, 4, 5, 6]);
      const rerun = events.filter((e) => e.e === 'start' && e.seq === 3)[1];
      expect(rerun.id).toBe(victim.id);
      expect(rerun.pid).not.toBe(victim.pid);
      expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 6, failed: 0 });
      expect(await harness.orderKeys()).toEqual([]);
    } finally {
      await harness.close();
    }
  });

  it('frees the key when the stalled checker fails the killed job instead (a promotion nobody sent)', async () => {
    const harness = new QueueHarness();
    try {
      // maxStalledCount 0: BullMQ fails a stalled job at once. Its worker never
      // learns it, so nobody promotes job 4; its own re-check (recheckMs) does.
      const settings = { ...FAST_STALLS, maxStalledCount: 0, recheckMs: 1500 };
      const workers = await harness.startWorkers(settings, settings);
      const victim = await killDuringThirdJob(harness, 'crash-f', workers);
      await harness.waitFinished(6, 90_000);

      const failed = await harness.queue.getJob(victim.id);
      expect(await failed!.getState()).toBe('failed');
      expect(failed!.failedReason).toMatch(/stalled/);
      const events = byKey(await harness.events()).get('crash-f')!;
      expect(overlapProblems(events, [victim])).toEqual([]);
      expect(startSeqs(events)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 5, failed: 1 });
      expect(await harness.orderKeys()).toEqual([]);
    } finally {
      await harness.close();
    }
  });
});
