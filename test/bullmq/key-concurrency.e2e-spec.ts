/**
 * `@Serialized(key, { concurrency: 2 })` on a BullMQ processor: at most 2 jobs of
 * one key at once across worker processes, let in in enqueue order, other keys in
 * parallel, no worker slot held while waiting; retries, failures, a removed job
 * and a killed worker keep the count. Every bound is checked on the event log (one
 * Redis list, one global order) and shown to be reached, not only respected.
 */
import type { WorkerProcess } from '../support/processes';
import { waitFor } from '../support/timing';
import { byKey, compactLog, grantProblems, limitProblems, maxPlaces, maxRunning, startSeqs, type TestJobData } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(240_000);

const N = 2;

describe('BullMQ jobs with @Serialized(…, { concurrency: 2 }) in two worker processes', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers(
      { concurrency: 4, keyForm: 'path', keyConcurrency: N, recheckMs: 2000 },
      { concurrency: 4, keyForm: 'function', keyConcurrency: N, recheckMs: 2000 },
    );
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('runs 3 keys x 16 jobs at most 2 at once per key, reaching 2, in enqueue order, over both processes', async () => {
    const keys = ['n-a', 'n-b', 'n-c'];
    const jobs: { data: TestJobData }[] = [];
    for (let seq = 1; seq <= 16; seq++) {
      for (const key of keys) {
        // The first two jobs of a key end only once both have started: only 2 at once gets past them.
        const first = seq <= 2 ? { barrier: { group: `first-${key}`, starts: 2 } } : {};
        jobs.push({ data: { key, seq, durationMs: 10 + ((seq * 7 + key.length * 3) % 25), ...first } });
      }
    }
    await harness.add(jobs);
    await harness.waitFinished(48, 120_000);

    const events = (await harness.events()).filter((e) => keys.includes(e.key));
    const perKey = byKey(events);
    for (const key of keys) {
      const list = perKey.get(key) ?? [];
      expect({ key, most: maxRunning(list), places: maxPlaces(list) }).toEqual({ key, most: N, places: N });
      expect({ key, problems: grantProblems(list, N) }).toEqual({ key, problems: [] });
      expect({ key, started: [...startSeqs(list)].sort((a, b) => a - b) }).toEqual({
        key,
        started: Array.from({ length: 16 }, (_, i) => i + 1),
      });
      expect(list.filter((e) => e.e === 'end')).toHaveLength(16);
    }
    expect(new Set(events.filter((e) => e.e === 'start').map((e) => e.pid)).size).toBe(2);
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 48, failed: 0 });
    expect(await harness.orderKeys()).toEqual([]);
  });

  it('runs 2 jobs of each of 4 keys side by side: 8 at once over the 8 slots', async () => {
    const keys = ['p-a', 'p-b', 'p-c', 'p-d'];
    const before = await harness.queue.getJobCounts('completed', 'failed');
    // Each job keeps running until all eight have started.
    await harness.add(keys.flatMap((key) => [1, 2].map((seq) => ({ data: { key, seq, barrier: { group: 'p', starts: 8 } } }))));
    await harness.waitFinished(before.completed + before.failed + 8, 120_000);

    const events = (await harness.events()).filter((e) => keys.includes(e.key));
    const firstEnd = events.findIndex((e) => e.e === 'end');
    expect(events.slice(0, firstEnd).filter((e) => e.e === 'start')).toHaveLength(8);
    for (const list of byKey(events).values()) expect(maxRunning(list)).toBe(N);
  });

  it('keeps the place of a failed attempt that will be retried, and frees the place of a job that failed for good', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    const retried = { attempts: 3, backoff: { type: 'fixed', delay: 400 } };
    const ids = await harness.add([
      { data: { key: 'n-retry', seq: 1, durationMs: 300 } },
      { data: { key: 'n-retry', seq: 2, durationMs: 50, failAttempts: 2 }, opts: retried },
      { data: { key: 'n-retry', seq: 3, durationMs: 50 } },
      { data: { key: 'n-retry', seq: 4, durationMs: 50, failAttempts: 99 }, opts: { attempts: 2, backoff: { type: 'fixed', delay: 200 } } },
      { data: { key: 'n-retry', seq: 5, durationMs: 50, failAttempts: 1 }, opts: { attempts: 2 } },
      { data: { key: 'n-retry', seq: 6, durationMs: 50, failAttempts: 99, unrecoverable: true }, opts: { attempts: 5 } },
      // Let in together once 6 is gone: the places of the failed jobs 4 and 6 are free.
      { data: { key: 'n-retry', seq: 7, barrier: { group: 'after-failures', starts: 2 } } },
      { data: { key: 'n-retry', seq: 8, barrier: { group: 'after-failures', starts: 2 } } },
    ]);
    await harness.waitFinished(before.completed + before.failed + 8, 120_000);

    const events = byKey(await harness.events()).get('n-retry')!;
    // A job waiting out its backoff holds its place: never more than 2 places, the retries included.
    expect(maxPlaces(events)).toBe(N);
    expect(grantProblems(events, N)).toEqual([]);
    expect(
      events
        .filter((e) => e.e === 'fail')
        .map((e) => `${e.seq}#${e.attempt}`)
        .sort(),
    ).toEqual(['2#0', '2#1', '4#0', '4#1', '5#0', '6#0']);
    expect(maxRunning(events.filter((e) => e.seq >= 7))).toBe(2);
    const states = await Promise.all(ids.map(async (id) => (await harness.queue.getJob(id))!.getState()));
    expect(states).toEqual(['completed', 'completed', 'completed', 'failed', 'completed', 'failed', 'completed', 'completed']);
    expect(await harness.orderKeys()).toEqual([]);
  });

  it('lets a failed job wait out its backoff while the jobs behind it use the other place (no early promotion)', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    const [slow] = await harness.add([
      // Fails once, then waits a backoff longer than the test: only a promotion could run it early.
      { data: { key: 'n-backoff', seq: 1, failAttempts: 1 }, opts: { attempts: 2, backoff: { type: 'fixed', delay: 3_600_000 } } },
      { data: { key: 'n-backoff', seq: 2, durationMs: 50 } },
      { data: { key: 'n-backoff', seq: 3, durationMs: 50 } },
      { data: { key: 'n-backoff', seq: 4, durationMs: 50 } },
    ]);
    await harness.waitFinished(before.completed + before.failed + 3, 120_000);

    const job = (await harness.queue.getJob(slow))!;
    expect(await job.getState()).toBe('delayed');
    const events = byKey(await harness.events()).get('n-backoff')!;
    expect([...startSeqs(events)].sort()).toEqual([1, 2, 3, 4]);
    expect(grantProblems(events, N)).toEqual([]);
    // Jobs 2-4 ran one at a time: job 1 kept its place through its backoff.
    expect(maxRunning(events.filter((e) => e.seq > 1))).toBe(1);

    await job.promote();
    await harness.waitFinished(before.completed + before.failed + 4, 120_000);
    expect(await job.getState()).toBe('completed');
    expect(await harness.orderKeys()).toEqual([]);
  });

  it('frees the place of a parked job that is removed', async () => {
    const before = await harness.queue.getJobCounts('completed', 'failed');
    const ids = await harness.add([
      { data: { key: 'n-rm', seq: 1, waitForEndOf: 'n-rm-gate' } },
      { data: { key: 'n-rm', seq: 2, waitForEndOf: 'n-rm-gate' } },
      { data: { key: 'n-rm', seq: 3 } },
      { data: { key: 'n-rm', seq: 4, barrier: { group: 'after-removal', starts: 2 } } },
      { data: { key: 'n-rm', seq: 5, barrier: { group: 'after-removal', starts: 2 } } },
    ]);
    // Job 3 has taken its place behind 1 and 2 and parked; removed there (a parked job wakes up
    // every recheckMs to look again: a removal that meets it active is tried again).
    await waitFor(
      async () => {
        const job = await harness.queue.getJob(ids[2]);
        if ((await job?.getState()) !== 'delayed') return false;
        return job!.remove().then(
          () => true,
          () => false,
        );
      },
      60_000,
      'job 3 parked and removed',
    );
    await harness.add([{ data: { key: 'n-rm-gate', seq: 1 } }]);
    await harness.waitFinished(before.completed + before.failed + 5, 120_000);

    const events = byKey(await harness.events()).get('n-rm')!;
    expect(events.some((e) => e.seq === 3)).toBe(false);
    // 4 and 5 ran together: the removed job 3 held no place.
    expect(maxRunning(events.filter((e) => e.seq >= 4))).toBe(2);
    expect(maxPlaces(events)).toBe(N);
    expect(await harness.orderKeys()).toEqual([]);
  });
});

describe('BullMQ jobs with @Serialized(…, { concurrency: 2 }): a waiting job holds no worker slot', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    // 3 slots: 2 for the jobs of key A that may run, one for anyone else.
    await harness.startWorkers({ concurrency: 3, keyConcurrency: N });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("finishes key C's job while key A's first two jobs run and 8 more of A wait", async () => {
    const jobs: { data: TestJobData }[] = [];
    // A's first two jobs keep their slots until C's job has ended (at most 60 s): C can
    // end first only if none of A's waiting jobs sits in the third slot.
    jobs.push({ data: { key: 'slot-a', seq: 1, waitForEndOf: 'slot-c' } }, { data: { key: 'slot-a', seq: 2, waitForEndOf: 'slot-c' } });
    for (let seq = 3; seq <= 10; seq++) jobs.push({ data: { key: 'slot-a', seq, durationMs: 100 } });
    jobs.push({ data: { key: 'slot-c', seq: 1, durationMs: 100 } });
    await harness.add(jobs);
    await harness.waitFinished(11, 120_000);

    const events = await harness.events();
    const endOfC = events.findIndex((e) => e.key === 'slot-c' && e.e === 'end');
    const firstEndOfA = events.findIndex((e) => e.key === 'slot-a' && e.e === 'end');
    expect(endOfC).toBeGreaterThanOrEqual(0);
    expect(endOfC).toBeLessThan(firstEndOfA);
    const a = byKey(events).get('slot-a')!;
    expect(maxRunning(a)).toBe(N);
    expect(grantProblems(a, N)).toEqual([]);
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 11, failed: 0 });
  });
});

describe('BullMQ jobs with @Serialized(…, { concurrency: 2 }): a worker killed mid-job', () => {
  it('keeps the killed job its place until stalled-job recovery re-runs it: never more than 2 places', async () => {
    const harness = new QueueHarness();
    try {
      // Short enough for a quick recovery; long enough that a busy machine does not lose a live job's lock
      // (a job handed out twice would run beside itself, as any BullMQ job: docs/bullmq.md).
      const fast = { lockDurationMs: 4000, stalledIntervalMs: 1000, concurrency: 2, keyConcurrency: N, recheckMs: 2000 };
      const workers = await harness.startWorkers(fast, fast);
      await harness.add(
        [1, 2, 3, 4, 5, 6, 7, 8].map((seq) => ({
          data: { key: 'n-crash', seq, durationMs: 150, ...(seq === 3 ? { slowOnceMs: 20_000 } : {}) },
        })),
      );
      const victim: WorkerProcess = await Promise.race(
        workers.map((w) => w.waitFor((m) => m.type === 'start' && m.key === 'n-crash' && m.seq === 3, 60_000).then(() => w)),
      );
      victim.kill('SIGKILL');
      await victim.exited;
      await harness.waitFinished(8, 120_000);

      const events = byKey(await harness.events()).get('n-crash')!;
      const runsOf3 = events.filter((e) => e.e === 'start' && e.seq === 3);
      expect(runsOf3).toHaveLength(2);
      expect(runsOf3[1].pid).not.toBe(runsOf3[0].pid);
      // The killed run's place lasts until its re-run ends: 1 other job at a time meanwhile.
      const places = maxPlaces(events);
      const problems = grantProblems(events, N);
      const log = places === N && problems.length === 0 ? '' : compactLog(events);
      expect({ places, problems, log }).toEqual({ places: N, problems: [], log: '' });
      expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 8, failed: 0 });
      expect(await harness.orderKeys()).toEqual([]);
    } finally {
      await harness.close();
    }
  });
});

describe('BullMQ jobs of one key with different limits (workers with concurrency 1 and 3)', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers({ concurrency: 4, keyConcurrency: 1 }, { concurrency: 4, keyConcurrency: 3, keyForm: 'function' });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('never lets more jobs in than the smallest limit among those inside and the entering one', async () => {
    const jobs = Array.from({ length: 30 }, (_, i) => ({ data: { key: 'mixed', seq: i + 1, durationMs: 20 + ((i * 13) % 30) } }));
    await harness.add(jobs);
    await harness.waitFinished(30, 120_000);

    const events = byKey(await harness.events()).get('mixed')!;
    expect(limitProblems(events)).toEqual([]);
    expect(maxPlaces(events)).toBeLessThanOrEqual(3);
    expect(grantProblems(events, 3)).toEqual([]);
    expect(new Set(events.map((e) => e.limit))).toEqual(new Set([1, 3]));
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 30, failed: 0 });
    expect(await harness.orderKeys()).toEqual([]);
  });
});
