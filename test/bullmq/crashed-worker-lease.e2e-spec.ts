/**
 * A worker SIGKILLed in the middle of job 0 of key K, with the
 * Redis lock driver. BullMQ hands job 0 back once its own lock (`lockDuration`)
 * runs out; the app lock job 0 took must not keep K blocked any longer than that
 * (it used to hold K for its whole 30 s lease). Measured from the kill until K's
 * next job, or job 0's retry, starts on the surviving worker; both outcomes of
 * BullMQ's stalled-job recovery: the job retried (`maxStalledCount: 1`) and the job
 * failed (`maxStalledCount: 0`). And the other side: a live job running for several
 * `lockDuration`s keeps its lock, renewed every third of that shorter lease.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { RedisLockProvider } from 'nestjs-serialized';
import type { WorkerMessage } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { sleep, uniqueId } from '../support/timing';
import { byKey, overlapProblems, startSeqs, type JobEvent } from './support/job-log';
import { QueueHarness, type WorkerSettings } from './support/queue-harness';

jest.setTimeout(180_000);

const LOCK_DURATION_MS = 4000;
const STALLED_INTERVAL_MS = 1000;
/**
 * BullMQ recovers a killed worker's job within `lockDuration` + 2 × `stalledInterval`
 * (6 s here); the bound leaves room for a busy host. The old code resumed after
 * 20–30 s: the app lock's 30 s lease, renewed every 10 s until the kill.
 */
const RESUME_BOUND_MS = 10_000;

/** Worker 1 alone picks job 0 of `key` (slow on its first run); worker 2 joins; worker 1 is SIGKILLed mid-job. */
async function killMidJob(harness: QueueHarness, key: string, settings: WorkerSettings) {
  const [worker1] = await harness.startWorkers(settings);
  await harness.add(
    [0, 1, 2, 3, 4, 5].map((seq) => ({ data: { key, seq, durationMs: 100, ...(seq === 0 ? { slowOnceMs: 120_000 } : {}) } })),
  );
  await worker1.waitFor((m) => m.type === 'start' && m.key === key && m.seq === 0, 60_000);
  const [worker2] = await harness.startWorkers(settings);

  const before = new Set<WorkerMessage>(worker2.messages);
  const killedAt = performance.now();
  worker1.kill('SIGKILL');
  await worker1.exited;
  const resumed = await worker2.waitFor((m) => m.type === 'start' && m.key === key && !before.has(m), 90_000);
  const resumeMs = Math.round(performance.now() - killedAt);
  const victim = (await harness.events()).find((e) => e.key === key && e.seq === 0 && e.e === 'start')!;
  expect(victim.pid).toBe(worker1.pid);
  return { worker2, victim, resumed, resumeMs };
}

function crashSettings(harness: QueueHarness, driver: 'redis' | 'postgres', maxStalledCount: number): WorkerSettings {
  return {
    driver,
    lockKeyPrefix: harness.lockKeyPrefix,
    concurrency: 2,
    lockDurationMs: LOCK_DURATION_MS,
    stalledIntervalMs: STALLED_INTERVAL_MS,
    maxStalledCount,
    // Only the failed outcome relies on it: nobody promotes job 1 after the stalled checker failed job 0.
    recheckMs: 1000,
  };
}

describe("BullMQ jobs with @Serialized: a worker killed mid-job does not block its key for the app lock's lease", () => {
  // PostgreSQL has no lease: the server frees the lock when the killed worker's session closes.
  it.each(['redis', 'postgres'] as const)(
    'maxStalledCount 1 (%s driver): job 0 is retried within a bound tied to lockDuration, then the rest run in order',
    async (driver) => {
      const harness = new QueueHarness();
      try {
        const key = 'lease-retried';
        const { worker2, victim, resumed, resumeMs } = await killMidJob(harness, key, crashSettings(harness, driver, 1));
        expect(resumed).toMatchObject({ seq: 0, id: victim.id });
        expect(resumeMs).toBeLessThan(RESUME_BOUND_MS);

        await harness.waitFinished(6, 90_000);
        const events = byKey(await harness.events()).get(key)!;
        expect(overlapProblems(events, [victim])).toEqual([]);
        // The killed run of job 0, its retry on worker 2, then 1..5 in enqueue order.
        expect(startSeqs(events)).toEqual([0, 0, 1, 2, 3, 4, 5]);
        expect(events.filter((e) => e.e === 'start' && e.seq === 0)[1].pid).toBe(worker2.pid);
        expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 6, failed: 0 });
        expect(await harness.orderKeys()).toEqual([]);
      } finally {
        await harness.close();
      }
    },
  );

  it('maxStalledCount 0 (redis driver): job 0 is failed and job 1 starts within a bound tied to lockDuration, then the rest in order', async () => {
    const harness = new QueueHarness();
    try {
      const key = 'lease-failed';
      const { victim, resumed, resumeMs } = await killMidJob(harness, key, crashSettings(harness, 'redis', 0));
      expect(resumed).toMatchObject({ seq: 1 });
      expect(resumeMs).toBeLessThan(RESUME_BOUND_MS);

      await harness.waitFinished(6, 90_000);
      const failed = await harness.queue.getJob(victim.id);
      expect(await failed!.getState()).toBe('failed');
      expect(failed!.failedReason).toMatch(/stalled/);
      const events = byKey(await harness.events()).get(key)!;
      expect(overlapProblems(events, [victim])).toEqual([]);
      expect(startSeqs(events)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 5, failed: 1 });
      expect(await harness.orderKeys()).toEqual([]);
    } finally {
      await harness.close();
    }
  });

  it('a live job running for 3 × lockDuration on a busy host keeps its app lock (redis driver): nobody else can take the key until it ends', async () => {
    const harness = new QueueHarness();
    const probe = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: harness.lockKeyPrefix });
    // A child spinning a core: renewals must keep up with the 4 s lease on a busy host.
    const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    try {
      const scope = uniqueId('lease-live');
      const key = 'lease-live';
      const [worker] = await harness.startWorkers({
        driver: 'redis',
        lockKeyPrefix: harness.lockKeyPrefix,
        scope,
        lockDurationMs: LOCK_DURATION_MS,
        stalledIntervalMs: STALLED_INTERVAL_MS,
      });
      await harness.add([{ data: { key, seq: 1, durationMs: 3 * LOCK_DURATION_MS } }]);
      await worker.waitFor((m) => m.type === 'start' && m.key === key, 60_000);

      // Another provider instance tries to take the job's key until the job ends.
      const startedAt = performance.now();
      let probes = 0;
      let lastProbeAt = startedAt;
      const taken: number[] = [];
      const ended = async () => (await harness.events()).some((e: JobEvent) => e.key === key && e.e === 'end');
      for (;;) {
        const lock = await probe.tryAcquire(`${scope}:${key}`);
        // The job logs its end before it releases: a key taken after that is no conflict.
        if (await ended()) {
          await lock?.release();
          break;
        }
        probes++;
        lastProbeAt = performance.now();
        if (lock) {
          taken.push(Math.round(lastProbeAt - startedAt));
          await lock.release();
        }
        await sleep(100);
      }
      expect(taken).toEqual([]);
      // The probing covered the job well past one lease, so an unrenewed lease would have been seen.
      expect(probes).toBeGreaterThan(0);
      expect(lastProbeAt - startedAt).toBeGreaterThan(2 * LOCK_DURATION_MS);

      await harness.waitFinished(1, 60_000);
      const events = (await harness.events()).filter((e: JobEvent) => e.key === key);
      expect(events.map((e) => e.e)).toEqual(['start', 'end']);
      expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 1, failed: 0 });
      expect(worker.errors).not.toMatch(/was lost while its holder ran/);
      // The probe names the right lock: once the job has released it, it is free.
      const after = await probe.tryAcquire(`${scope}:${key}`);
      expect(after).not.toBeNull();
      await after!.release();
    } finally {
      spinner.kill('SIGKILL');
      await probe.close();
      await harness.close();
    }
  });
});
