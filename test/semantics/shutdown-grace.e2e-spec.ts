import { Redis } from 'ioredis';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { uniqueId } from '../support/timing';

const WORKER = 'test/semantics/workers/shutdown-grace.worker.ts';
const GRACE_MS = 300;
const LEASE_MS = 1500;

/**
 * Background work (a `LockService.run` section, no HTTP) still
 * running when `app.close()`'s grace period ends. The provider stops renewing
 * (Redis) or watching (PostgreSQL) the lock then, so the section must be told at
 * that moment: its `lock.signal` aborts with `LockLostError`, before another
 * process can take the key. Two real processes: the app being closed, and another
 * instance waiting for the same key.
 */
describe.each([['redis'], ['postgres']])(
  'shutdown past the grace period (%s): the section is told before anyone else gets the key',
  (driver) => {
    const workers: WorkerProcess[] = [];
    let keyPrefix: string;

    const start = (name: string, key: string): WorkerProcess => {
      const worker = WorkerProcess.start(name, WORKER, {
        DRIVER: driver,
        REDIS_URL: TEST_REDIS_URL,
        DATABASE_URL: TEST_DATABASE_URL,
        KEY_PREFIX: keyPrefix,
        KEY: key,
        LEASE_MS: String(LEASE_MS),
        GRACE_MS: String(GRACE_MS),
        SECTION_MS: '15000',
      });
      workers.push(worker);
      return worker;
    };

    beforeEach(() => {
      // Short: it becomes the PostgreSQL application_name (63 bytes).
      keyPrefix = uniqueId('grace').slice(0, 40);
    });

    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      if (driver === 'redis') {
        const redis = new Redis(TEST_REDIS_URL);
        const keys = await redis.keys(`${keyPrefix}:*`);
        if (keys.length) await redis.del(...keys);
        redis.disconnect();
      }
    });

    it("aborts the running section's lock.signal with LockLostError when the grace ends, before another process takes the key", async () => {
      const key = 'background-job';
      const app = start(`${driver}-app`, key);
      const other = start(`${driver}-other`, key);
      await Promise.all([app.waitForType('ready', 60_000), other.waitForType('ready', 60_000)]);

      app.send({ type: 'run' });
      const inside = await app.waitForType('inside');
      // The other instance waits for the key while the app shuts down.
      other.send({ type: 'take' });
      app.send({ type: 'close' });
      const closing = await app.waitForType('closing');

      const took = await other.waitFor((m) => m.type === 'took' || m.type === 'failed', 45_000);
      expect(took).toMatchObject({ type: 'took' });
      expect(BigInt(took.token as string) > BigInt(inside.token as string)).toBe(true);

      const aborted: WorkerMessage | undefined = app.messages.find((m) => m.type === 'aborted');
      const ended = app.messages.find((m) => m.type === 'section-ended');
      // Before the fix: no abort at all, and (Redis) the other process took the key
      // at the end of the lease while the section still ran.
      const seen = aborted
        ? { aborted: true }
        : {
            aborted: false,
            otherTookKeyAfterCloseMs: (took.at as number) - (closing.at as number),
            sectionStillRan: !ended || (ended.at as number) > (took.at as number),
          };
      expect(seen).toEqual({ aborted: true });
      expect(aborted).toMatchObject({ name: 'LockLostError' });
      expect(aborted!.message).toContain(key);
      // The section had its whole grace period...
      expect((aborted!.at as number) - (closing.at as number)).toBeGreaterThanOrEqual(GRACE_MS - 5);
      // ...and was told before anyone else could have the key.
      expect(took.at as number).toBeGreaterThanOrEqual(aborted!.at as number);
      await app.waitForType('closed', 30_000);
      expect(app.messages.filter((m) => m.type === 'failed')).toEqual([]);
    }, 120_000);
  },
);
