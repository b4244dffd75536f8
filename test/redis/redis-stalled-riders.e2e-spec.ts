import { sleep, waitFor } from '../support/timing';
import { ThreeLockWorkers } from './support/three-lock-workers';

/**
 * Riders behind a queued place, on a bad day: the process whose place they ride on
 * stalls past its hand-off lease. Three real processes: H holds; W queues W1 and
 * then W2 and W3, which ride behind W1's place (no places of their own); X queues
 * behind. W blocks its event loop; H releases (W1 becomes the owner for one
 * hand-off lease), the lease runs out during the stall and X is granted the key.
 * When W's loop turns again, W1's hand-off is stale: W1 must not run while X holds
 * the key, and its riders must neither run on it nor be stranded — they take places
 * of their own, and all of W's sections run after X, one at a time.
 */
const HEARTBEAT_MS = 2000; // the hand-off lease (leases are 30 s)
const STALL_MS = 6000; // three hand-off leases

describe('RedisLockProvider: riders behind a place whose process stalls past its hand-off', () => {
  let scene: ThreeLockWorkers;

  beforeAll(async () => {
    scene = await ThreeLockWorkers.start('stalled-riders', HEARTBEAT_MS);
  }, 150_000);

  afterAll(() => scene.close());

  it('no rider runs on the stale hand-off or is stranded: H, X, then W1-W3 one at a time, fencing tokens increasing', async () => {
    const [h, w, x] = scene.workers;
    const key = 'stall:riders';
    const keys = scene.keysOf(key);
    const names = scene.names(key);

    h.send({ type: 'section', id: 'H', ...names });
    expect(await scene.section(h, 'H')).toMatchObject({ type: 'entered' });
    w.send({ type: 'section', id: 'W1', waitTimeoutMs: 60_000, ...names });
    await scene.queued(key, 1);
    // W hears its wake-up channel once W1 has a place (riders need it).
    await sleep(300);
    w.send({ type: 'section', id: 'W2', waitTimeoutMs: 60_000, ...names });
    w.send({ type: 'section', id: 'W3', waitTimeoutMs: 60_000, ...names });
    await sleep(300);
    // They ride behind W1's place: still one place in Redis.
    expect(await scene.redis.zcard(keys.queue)).toBe(1);
    x.send({ type: 'section', id: 'X', waitTimeoutMs: 60_000, ...names });
    await scene.queued(key, 2);

    w.send({ type: 'stall', ms: STALL_MS });
    await w.waitForType('stalling');
    await scene.release(h, 'H');
    // W1's hand-off lease runs out during the stall and X is granted the key.
    expect(await scene.section(x, 'X')).toMatchObject({ type: 'entered' });
    await w.waitForType('stalled', 60_000);
    // W reads the stale message: W1 waits again; W2 and W3 take places of their own.
    await scene.queued(key, 3);
    await scene.release(x, 'X');
    for (let i = 0; i < 3; i++) {
      const next = await w.waitFor((m) => (m.type === 'entered' || m.type === 'failed') && !w.messages.some((r) => r.type === 'released' && r.id === m.id), 60_000);
      expect(next).toMatchObject({ type: 'entered' });
      await scene.release(w, next.id as string);
    }

    const { overlaps, ran, notIncreasing } = await scene.outcome(names);
    expect({ overlaps, first: ran.slice(0, 2), rest: [...ran.slice(2)].sort(), notIncreasing }).toEqual({
      overlaps: 0, first: ['H', 'X'], rest: ['W1', 'W2', 'W3'], notIncreasing: [],
    });
    await waitFor(async () => (await scene.redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 10_000, 'nothing left of the lock');
  }, 180_000);
});
