import type { WorkerProcess } from '../support/processes';
import { waitFor } from '../support/timing';
import { ThreeLockWorkers } from './support/three-lock-workers';

/**
 * A waiter whose own process blocks its event loop for longer than the heart-beat
 * tolerance keeps its place. Three real processes: H holds, W
 * and X wait (W first). W blocks its loop for four heart-beat timeouts: Redis sees
 * no heart-beat from it all that time. Nobody needed to pass W over meanwhile (H
 * still holds), so Redis still has W's place: once W's loop turns again it must
 * neither fail nor take a new place behind X, and it runs before X.
 */
const HEARTBEAT_MS = 1000;
const STALL_MS = 4 * HEARTBEAT_MS;

describe('RedisLockProvider: a waiter whose process stalls past the heart-beat tolerance keeps its place', () => {
  let scene: ThreeLockWorkers;

  beforeAll(async () => {
    scene = await ThreeLockWorkers.start('stalled-place', HEARTBEAT_MS);
  }, 150_000);

  afterAll(() => scene.close());

  it('runs in arrival order after its stall: H, W, X, no failure, no overlap', async () => {
    const { redis, workers } = scene;
    const [h, w, x] = workers;
    const key = 'stall:place';
    const keys = scene.keysOf(key);
    const names = scene.names(key);
    const section = scene.section.bind(scene);
    const release = scene.release.bind(scene);
    const session = (worker: WorkerProcess): string => (worker.messages.find((m) => m.type === 'ready')!.session as string) + ':';
    const queue = (): Promise<string[]> => redis.zrange(keys.queue, 0, -1);
    const serverMs = async (): Promise<number> => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };

    h.send({ type: 'section', id: 'H', ...names });
    expect(await section(h, 'H')).toMatchObject({ type: 'entered' });
    w.send({ type: 'section', id: 'W', waitTimeoutMs: 120_000, ...names });
    await waitFor(async () => (await queue()).length === 1, 20_000, 'W queued');
    x.send({ type: 'section', id: 'X', waitTimeoutMs: 120_000, ...names });
    await waitFor(async () => (await queue()).length === 2, 20_000, 'X queued');
    const [wToken] = await queue();
    expect(wToken.startsWith(session(w))).toBe(true);

    w.send({ type: 'stall', ms: STALL_MS });
    await w.waitForType('stalling');
    // Redis sees W's heart-beat run out while W does not run.
    await waitFor(
      async () => Number(await redis.zscore(keys.heartbeats, wToken)) < (await serverMs()),
      30_000,
      "W's heart-beat to run out",
    );
    await w.waitForType('stalled', 60_000);
    // Once W runs again it beats for the same place (same token, still first): it did not start over.
    await waitFor(async () => Number(await redis.zscore(keys.heartbeats, wToken)) > (await serverMs()), 30_000, 'W to beat again');
    expect(await queue()).toEqual([wToken, expect.stringMatching(new RegExp(`^${session(x)}`))]);

    await release(h, 'H');
    expect(await section(w, 'W')).toMatchObject({ type: 'entered' });
    await release(w, 'W');
    expect(await section(x, 'X')).toMatchObject({ type: 'entered' });
    await release(x, 'X');

    const order = (await redis.lrange(names.orderKey, 0, -1)).map((entry) => entry.split(' ')[0]);
    const overlaps = Number((await redis.get(names.overlapKey)) ?? 0);
    expect({ order, overlaps, failed: workers.flatMap((p) => p.messages.filter((m) => m.type === 'failed')) }).toEqual({
      order: ['H', 'W', 'X'],
      overlaps: 0,
      failed: [],
    });
    await waitFor(async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats)) === 0, 20_000, 'no lock keys left');
  }, 240_000);
});
