import { waitFor } from '../support/timing';
import { ThreeLockWorkers } from './support/three-lock-workers';

/**
 * A waiter whose own event loop stalls past its hand-off lease must not run on
 * that hand-off. Three real processes: H holds, W and X wait
 * (W first); W blocks its loop with a synchronous busy loop right after it
 * queued, H releases (the release makes W the owner for min(lease, heartbeatMs)
 * and publishes to W's process), W's short lease runs out, X is granted the key;
 * then W reads the stale message. W must not enter while X holds the key: it
 * confirms with Redis, learns the key is no longer its own, and waits again.
 */
const HEARTBEAT_MS = 2000; // the hand-off lease (leases are 30 s)
const STALL_MS = 6000; // three hand-off leases

describe('RedisLockProvider: a waiter whose event loop stalls past its hand-off', () => {
  let scene: ThreeLockWorkers;

  beforeAll(async () => {
    scene = await ThreeLockWorkers.start('stalled-waiter', HEARTBEAT_MS);
  }, 150_000);

  afterAll(() => scene.close());

  it('never runs on an expired hand-off: no overlap with the next holder, fencing tokens strictly increasing in the order sections ran', async () => {
    const [h, w, x] = scene.workers;
    const { redis } = scene;
    const key = 'stall:hand-off';
    const keys = scene.keysOf(key);
    const names = scene.names(key);
    const queued = (count: number): Promise<void> => scene.queued(key, count);
    const section = scene.section.bind(scene);
    const release = scene.release.bind(scene);

    h.send({ type: 'section', id: 'H', ...names });
    expect(await section(h, 'H')).toMatchObject({ type: 'entered' });
    w.send({ type: 'section', id: 'W', waitTimeoutMs: 60_000, ...names });
    await queued(1);
    x.send({ type: 'section', id: 'X', waitTimeoutMs: 60_000, ...names });
    await queued(2);

    w.send({ type: 'stall', ms: STALL_MS });
    await w.waitForType('stalling');
    await release(h, 'H');
    // The scenario holds: the release made the stalled W the owner.
    const wSession = (w.messages.find((m) => m.type === 'ready')!.session as string) + ':';
    expect(((await redis.get(keys.lock)) ?? '').startsWith(wSession)).toBe(true);

    // W's hand-off lease runs out during its stall and X is granted the key.
    expect(await section(x, 'X')).toMatchObject({ type: 'entered' });
    await w.waitForType('stalled', 60_000);
    // W now reads the stale message: it either enters (the defect) or waits again behind X.
    await waitFor(
      async () => w.messages.some((m) => m.id === 'W' && m.type !== 'released') || (await redis.zcard(keys.queue)) === 1,
      30_000,
      'W to enter or take a new place',
    );
    await release(x, 'X');
    // W ran after all, once X had released: it waited again rather than failing.
    expect(await section(w, 'W')).toMatchObject({ type: 'entered' });
    await release(w, 'W');

    expect(await scene.outcome(names)).toEqual({ overlaps: 0, ran: ['H', 'X', 'W'], notIncreasing: [] });
    expect(await redis.exists(keys.lock, keys.queue, keys.heartbeats)).toBe(0);
  }, 180_000);
});
