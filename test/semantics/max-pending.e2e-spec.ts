import { Redis } from 'ioredis';
import { PgInspector } from '../postgres/support/pg-inspect';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { sleep, uniqueId, waitFor } from '../support/timing';

const WORKER = 'test/semantics/workers/max-pending.worker.ts';

/**
 * `maxPending` counts the same on every provider. The caller
 * becoming the holder is not a waiter (a free key admits 1 + maxPending callers of
 * a process), and while another process holds the key, maxPending callers of this
 * one may wait. Two app instances in processes of their own share the backend.
 */
describe.each([['redis'], ['postgres']])('maxPending across two processes (%s)', (driver) => {
  const workers: WorkerProcess[] = [];
  let keyPrefix: string;

  const start = (name: string, maxPending: number): WorkerProcess => {
    const worker = WorkerProcess.start(name, WORKER, {
      DRIVER: driver,
      REDIS_URL: TEST_REDIS_URL,
      DATABASE_URL: TEST_DATABASE_URL,
      KEY_PREFIX: keyPrefix,
      KEY: 'account-7',
      MAX_PENDING: String(maxPending),
    });
    workers.push(worker);
    return worker;
  };

  /** What the backend still has of this prefix: Redis keys but the fencing counter, or advisory locks. */
  const leftovers = async (): Promise<number> => {
    if (driver === 'redis') {
      const redis = new Redis(TEST_REDIS_URL);
      try {
        return (await redis.keys(`${keyPrefix}:*`)).filter((k) => !k.startsWith(`${keyPrefix}:fence`)).length;
      } finally {
        redis.disconnect();
      }
    }
    const pg = await PgInspector.connect();
    try {
      return await pg.advisoryLocks(`nestjs-serialized:${keyPrefix}`);
    } finally {
      await pg.close();
    }
  };

  beforeEach(() => {
    keyPrefix = uniqueId('mp7').slice(0, 40);
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

  it('free key: 1 holder + maxPending waiters of the first process; behind it, maxPending waiters of the second; the rest busy', async () => {
    const first = start('first', 1);
    const second = start('second', 2);
    await Promise.all([first.waitForType('ready', 60_000), second.waitForType('ready', 60_000)]);

    // Three callers at once on a free key, maxPending 1: one holds, one waits, the third is busy.
    first.send({ type: 'callers', count: 3 });
    await first.waitFor((m) => m.type === 'entered' && m.i === 0);
    await first.waitFor((m) => m.type === 'refused' && m.i === 2);
    // Four callers at once while the first process holds the key, maxPending 2: two wait, two are busy.
    second.send({ type: 'callers', count: 4 });
    await second.waitFor((m) => m.type === 'refused' && m.i === 3);
    await second.waitFor((m) => m.type === 'refused' && m.i === 2);

    // Let every admitted caller through, one at a time, whoever the backend picks,
    // until each caller of both processes has entered or been refused.
    const callers = new Map([
      [first, 3],
      [second, 4],
    ]);
    const settled = (worker: WorkerProcess) => worker.messages.filter((m) => m.type === 'released' || m.type === 'refused').length;
    const entered: string[] = [];
    const seen = new Set<WorkerMessage>();
    while ([...callers].some(([worker, count]) => settled(worker) < count)) {
      let next: { worker: WorkerProcess; message: WorkerMessage } | undefined;
      await waitFor(
        () => {
          for (const worker of callers.keys()) {
            const message = worker.messages.find((m) => m.type === 'entered' && !seen.has(m));
            if (message) next = { worker, message };
          }
          return next !== undefined;
        },
        30_000,
        `the next caller to enter (entered so far: ${entered.join(', ')})`,
      );
      const { worker, message } = next!;
      seen.add(message);
      entered.push(`${worker.name} ${message.i as number}`);
      worker.send({ type: 'release', i: message.i as number });
      await worker.waitFor((m) => m.type === 'released' && m.i === message.i);
    }

    const outcome = (worker: WorkerProcess) => ({
      entered: worker.messages.filter((m) => m.type === 'entered').map((m) => m.i),
      refused: worker.messages.filter((m) => m.type === 'refused').map((m) => [m.i, m.name, m.reason]),
    });
    // Before the fix the first process refused its second caller too: refused [1, 2].
    expect(outcome(first)).toEqual({
      entered: [0, 1],
      refused: [[2, 'LockBusyError', 'max-pending']],
    });
    expect(outcome(second)).toEqual({
      entered: [0, 1],
      refused: expect.arrayContaining([
        [2, 'LockBusyError', 'max-pending'],
        [3, 'LockBusyError', 'max-pending'],
      ]),
    });
    expect(outcome(second).refused).toHaveLength(2);
    expect(entered).toHaveLength(4);
    expect(entered[0]).toBe('first 0');
    // The refused left nothing behind: no queue entry, heart-beat or advisory lock of theirs.
    await waitFor(async () => (await leftovers()) === 0, 10_000, 'no leftovers').catch(() => undefined);
    expect(await leftovers()).toBe(0);
  }, 120_000);

  it('a caller that comes once maxPending callers already wait behind the other process is refused, also after a pause', async () => {
    // The Redis model found it (docs/protocol.md, P7): the later caller rode behind the first waiter's place.
    const holder = start('holder', 5);
    const bounded = start('bounded', 1);
    await Promise.all([holder.waitForType('ready', 60_000), bounded.waitForType('ready', 60_000)]);
    holder.send({ type: 'callers', count: 1 });
    await holder.waitFor((m) => m.type === 'entered' && m.i === 0);
    bounded.send({ type: 'caller', i: 0 });
    await sleep(300); // its place is known (and its process hears its channel)
    bounded.send({ type: 'caller', i: 1 });
    const refused = await bounded.waitFor((m) => m.type === 'refused' && m.i === 1, 10_000);
    expect(refused).toMatchObject({ name: 'LockBusyError', reason: 'max-pending' });
    holder.send({ type: 'release', i: 0 });
    await bounded.waitFor((m) => m.type === 'entered' && m.i === 0);
    bounded.send({ type: 'release', i: 0 });
    await bounded.waitFor((m) => m.type === 'released' && m.i === 0);
    expect(bounded.messages.filter((m) => m.type === 'entered').map((m) => m.i)).toEqual([0]);
    await waitFor(async () => (await leftovers()) === 0, 10_000, 'no leftovers').catch(() => undefined);
    expect(await leftovers()).toBe(0);
  }, 120_000);
});
