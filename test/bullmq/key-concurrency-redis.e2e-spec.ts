/**
 * `@Serialized(key, { concurrency: 2 })` on a BullMQ processor whose app runs the
 * Redis lock driver, as a multi-instance deployment does: each job also holds the
 * app's own lock for its key, so the driver must let two holders of the key in at
 * once. At most 2 jobs of one key at once across two worker processes, reaching 2,
 * in enqueue order.
 */
import { byKey, grantProblems, maxPlaces, maxRunning, startSeqs, type TestJobData } from './support/job-log';
import { QueueHarness } from './support/queue-harness';

jest.setTimeout(240_000);

const N = 2;

describe('BullMQ jobs with @Serialized(…, { concurrency: 2 }) on the Redis driver, two worker processes', () => {
  let harness: QueueHarness;

  beforeAll(async () => {
    harness = new QueueHarness();
    await harness.startWorkers(
      { concurrency: 4, keyForm: 'path', keyConcurrency: N, recheckMs: 2000, driver: 'redis' },
      { concurrency: 4, keyForm: 'function', keyConcurrency: N, recheckMs: 2000, driver: 'redis' },
    );
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('runs 2 keys x 10 jobs at most 2 at once per key, reaching 2, in enqueue order, over both processes', async () => {
    const keys = ['r-a', 'r-b'];
    const jobs: { data: TestJobData }[] = [];
    for (let seq = 1; seq <= 10; seq++) {
      for (const key of keys) {
        // The first two jobs of a key end only once both have started: only 2 at once gets past them.
        const first = seq <= 2 ? { barrier: { group: `first-${key}`, starts: 2 } } : {};
        jobs.push({ data: { key, seq, durationMs: 10 + ((seq * 7 + key.length * 3) % 25), ...first } });
      }
    }
    await harness.add(jobs);
    await harness.waitFinished(20, 120_000);

    const events = (await harness.events()).filter((e) => keys.includes(e.key));
    const perKey = byKey(events);
    for (const key of keys) {
      const list = perKey.get(key) ?? [];
      expect({ key, most: maxRunning(list), places: maxPlaces(list) }).toEqual({ key, most: N, places: N });
      expect({ key, problems: grantProblems(list, N) }).toEqual({ key, problems: [] });
      expect({ key, started: [...startSeqs(list)].sort((a, b) => a - b) }).toEqual({
        key,
        started: Array.from({ length: 10 }, (_, i) => i + 1),
      });
      expect(list.filter((e) => e.e === 'end')).toHaveLength(10);
    }
    expect(new Set(events.filter((e) => e.e === 'start').map((e) => e.pid)).size).toBe(2);
    expect(await harness.queue.getJobCounts('completed', 'failed')).toMatchObject({ completed: 20, failed: 0 });
    expect(await harness.orderKeys()).toEqual([]);
  });
});
