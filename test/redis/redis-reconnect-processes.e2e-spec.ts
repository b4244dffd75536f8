import { Redis } from 'ioredis';
import { ThrowawayRedis } from './support/throwaway-redis';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { sleep, uniqueId } from '../support/timing';
import { lockValue } from './support/lock-value';

const WORKER = 'test/redis/workers/reconnect-processes.worker.ts';
/** Next renewal a third of it away: 10 s. */
const LEASE_MS = 30_000;
/** The outcome bound: ~2 s after Redis answers again, with room for a busy host; far below lease / 3. */
const DETECTED_WITHIN_MS = 4000;
/** "About when B enters": A may learn of its loss at most this long after B holds the key. */
const AT_MOST_AFTER_B_MS = 2000;

/**
 * Across real processes: process A holds a key (30 s lease)
 * through a throwaway Redis; the test restarts that Redis without persistence, so
 * the lock is gone; process B then takes the key. A must learn it at once, as soon
 * as Redis answers again, not at its next renewal (lease / 3 later) while B already
 * holds the key: its lock.signal aborts, so its section stops (the overlap that is
 * left is what fencing tokens are for).
 */
describe('Redis across processes: held locks are re-checked when Redis answers again', () => {
  const workers: WorkerProcess[] = [];
  let server: ThrowawayRedis;

  const start = (name: string, keyPrefix: string, key: string): WorkerProcess => {
    const worker = WorkerProcess.start(name, WORKER, {
      REDIS_URL: server.url,
      KEY_PREFIX: keyPrefix,
      LEASE_MS: String(LEASE_MS),
      KEY: key,
    });
    workers.push(worker);
    return worker;
  };

  beforeEach(async () => {
    server = await ThrowawayRedis.create();
    await server.start();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await server.kill();
  });

  it("after a restart without persistence, A's signal aborts within ~2 s of Redis answering, about when B enters", async () => {
    const keyPrefix = uniqueId('rc4');
    const key = 'account-4';
    const a = start('holder', keyPrefix, key);
    const b = start('newcomer', keyPrefix, key);
    await Promise.all([a.waitForType('ready', 60_000), b.waitForType('ready', 60_000)]);
    a.send({ type: 'hold' });
    const held = await a.waitForType('held');

    await server.kill();
    await a.waitFor((m) => m.type === 'status' && m.status === 'reconnecting', 10_000);
    // The outage lasts a while: long enough for the clients' reconnect back-off to grow.
    await sleep(2500);
    await server.start(); // empty: the lock went with the data
    const answeredAt = Date.now();
    b.send({ type: 'take', waitTimeoutMs: 20_000 });

    const took = await b.waitFor((m) => m.type === 'took' || m.type === 'failed', 30_000);
    expect(took).toMatchObject({ type: 'took' });
    // Waited for past lease / 3 (the next renewal), so that the old behaviour shows its time.
    const aborted = await a.waitFor((m) => m.type === 'aborted' || m.type === 'failed', 20_000).catch(() => undefined);
    const since = (m: WorkerMessage | undefined): number | undefined => m && (m.at as number) - answeredAt;
    const measured = {
      abortedAfterAnswerMs: since(aborted),
      bTookAfterAnswerMs: since(took),
      aAbortedAfterBTookMs: aborted && (aborted.at as number) - (took.at as number),
    };
    // Failed before: A's signal aborted only at its next renewal, seconds after B held the key.
    expect({
      aborted: aborted && { type: aborted.type, name: aborted.name },
      withinBound: measured.abortedAfterAnswerMs !== undefined && measured.abortedAfterAnswerMs < DETECTED_WITHIN_MS,
      aboutWhenBEntered: measured.aAbortedAfterBTookMs !== undefined && measured.aAbortedAfterBTookMs <= AT_MOST_AFTER_B_MS,
      measured,
    }).toEqual({ aborted: { type: 'aborted', name: 'LockLostError' }, withinBound: true, aboutWhenBEntered: true, measured });
    expect(aborted!.message).toContain(key);
    // A's section stopped when told, and its release left B's hold alone.
    await a.waitForType('released');
    expect(a.messages.map((m) => m.type).filter((t) => ['aborted', 'section-ended', 'released'].includes(t))).toEqual([
      'aborted',
      'section-ended',
      'released',
    ]);
    const inspector = new Redis(server.url);
    try {
      expect(await inspector.get(held.redisKey as string)).toBe(lockValue(took.owner as string, took.token as string));
    } finally {
      inspector.disconnect();
    }
    b.send({ type: 'release' });
    await b.waitForType('released');
    expect([...a.messages, ...b.messages].filter((m) => m.type === 'failed')).toEqual([]);
  }, 120_000);
});
