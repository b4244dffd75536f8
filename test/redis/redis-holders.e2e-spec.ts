import { Redis } from 'ioredis';
import { RedisLockProvider } from 'nestjs-serialized';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * Several holders of one key on Redis (`concurrency: N`, `shared: true`), across
 * real OS processes sharing one Redis and a recorder in it (test/redis/workers/holders.worker.ts):
 * the bound reached and never exceeded, readers inside together, a writer never
 * beside anyone and not starved, fencing tokens distinct (a writer's above every token
 * that left before it entered, anyone's above those of the writers that left), a
 * random mix with callers giving up, SIGKILLed and stalled holders' places reaching a
 * waiter of another process, and a try on a full key.
 */
const WORKER = 'test/redis/workers/holders.worker.ts';
const LEASE_MS = 1000;
const HEARTBEAT_MS = 1500;

describe('RedisLockProvider: several holders of one key across OS processes', () => {
  const prefix = uniqueId('holders');
  let redis: Redis;
  let local: RedisLockProvider;
  let all: WorkerProcess[] = [];
  let spare: WorkerProcess[] = [];
  let ids = 0;

  const start = (count: number): WorkerProcess[] =>
    Array.from({ length: count }, (_, i) =>
      WorkerProcess.start(`holders-${i}`, WORKER, {
        REDIS_URL: TEST_REDIS_URL,
        KEY_PREFIX: prefix,
        LEASE_MS: String(LEASE_MS),
        HEARTBEAT_MS: String(HEARTBEAT_MS),
      }),
    );
  const doomed = (): WorkerProcess => {
    const worker = spare.shift();
    if (!worker) throw new Error('no spare worker left for a crash test');
    return worker;
  };
  const recorder = (name: string) => {
    const rec = `${prefix}-data:${name}`;
    const read = async (field: string): Promise<number> => Number((await redis.get(`${rec}:${field}`)) ?? 0);
    return {
      rec,
      peak: () => read('peak'),
      inside: () => read('inside'),
      violations: () => read('violations'),
      fences: async () => (await redis.lrange(`${rec}:fences`, 0, -1)).map(BigInt),
      order: async () => (await redis.lrange(`${rec}:order`, 0, -1)).map((entry) => entry.split(' ')[0]),
    };
  };
  const queued = (key: string, count: number): Promise<void> =>
    waitFor(async () => (await redis.zcard(local.redisKeysOf(key).queue)) === count, 10_000, `${count} queued waiters of ${key}`);

  /** Sends `enter` and returns the message that answers it (entered or failed), without waiting for it yet. */
  const enter = (worker: WorkerProcess, command: Omit<WorkerMessage, 'type' | 'id'>): { id: string; answer: Promise<WorkerMessage> } => {
    const id = `e${++ids}`;
    const answer = worker.waitFor((m) => (m.type === 'entered' || m.type === 'failed') && m.id === id, 60_000);
    worker.send({ type: 'enter', id, ...command });
    return { id, answer };
  };
  const release = async (worker: WorkerProcess, id: string): Promise<void> => {
    const done = worker.waitFor((m) => m.type === 'released' && m.id === id);
    worker.send({ type: 'release', id });
    await done;
  };
  const loops = (group: WorkerProcess[], id: string) =>
    Promise.all(group.map((w) => w.waitFor((m) => m.type === 'loop-done' && m.id === id, 120_000)));
  const entered = (worker: WorkerProcess, id: string): boolean => worker.messages.some((m) => m.type === 'entered' && m.id === id);

  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
    local = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS });
    all = start(6);
    spare = all.slice(4);
    await Promise.all(all.map((w) => w.waitForType('ready', 120_000)));
  }, 150_000);

  afterAll(async () => {
    await Promise.all(all.map((w) => w.stop()));
    await local.close();
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  it('concurrency 3 over 3 processes x 3 callers: 3 inside at once, never 4, each token distinct', async () => {
    const r = recorder('n3');
    const group = all.slice(0, 3);
    const done = loops(group, 'n3');
    for (const worker of group)
      worker.send({ type: 'loop', id: 'n3', key: 'tenant:n3', rec: r.rec, limit: 3, concurrency: 3, parallel: 3, rounds: 12, holdMs: 15 });
    await done;

    expect(await r.peak()).toBe(3);
    expect(await r.violations()).toBe(0);
    expect(await r.inside()).toBe(0);
    const fences = await r.fences();
    expect(fences).toHaveLength(3 * 3 * 12);
    expect(new Set(fences.map(String)).size).toBe(fences.length);
  }, 150_000);

  it('mixes concurrency 3 with plain (exclusive) callers of the key: never more than 3, a plain caller always alone', async () => {
    const r = recorder('mix');
    const group = all.slice(0, 3);
    const done = loops(group, 'mix');
    group[0].send({ type: 'loop', id: 'mix', key: 'tenant:mix', rec: r.rec, limit: 3, parallel: 2, rounds: 10, holdMs: 10 });
    group[1].send({
      type: 'loop',
      id: 'mix',
      key: 'tenant:mix',
      rec: r.rec,
      limit: 3,
      concurrency: 3,
      parallel: 3,
      rounds: 10,
      holdMs: 10,
    });
    group[2].send({
      type: 'loop',
      id: 'mix',
      key: 'tenant:mix',
      rec: r.rec,
      limit: 3,
      concurrency: 3,
      parallel: 3,
      rounds: 10,
      holdMs: 10,
    });
    await done;

    expect(await r.violations()).toBe(0);
    expect(await r.peak()).toBeGreaterThanOrEqual(2);
    expect(await r.peak()).toBeLessThanOrEqual(3);
    expect((await r.fences()).length).toBe(2 * 10 + 2 * 3 * 10);
  }, 150_000);

  it('a random mix over 4 processes (plain, concurrency 3, shared; a fifth gives up waiting): no rule broken, everyone else through', async () => {
    const r = recorder('random');
    const group = all.slice(0, 4);
    const done = Promise.all(group.map((w) => w.waitFor((m) => m.type === 'mixed-done' && m.id === 'random', 120_000)));
    const shapes = [{}, { concurrency: 3 }, { concurrency: 3 }, { shared: true }, { shared: true }];
    for (const worker of group)
      worker.send({
        type: 'mixed',
        id: 'random',
        key: 'tenant:random',
        rec: r.rec,
        parallel: 4,
        rounds: 15,
        holdMs: 10,
        shapes,
        giveUps: 0.2,
      });
    const results = await done;

    expect((await redis.lrange(`${r.rec}:order`, 0, -1)).filter((entry) => entry.startsWith('BAD'))).toEqual([]);
    expect(await r.violations()).toBe(0);
    expect(await r.inside()).toBe(0);
    const entered = results.reduce((n, m) => n + (m.entered as number), 0);
    const gaveUp = results.reduce((n, m) => n + (m.gaveUp as number), 0);
    expect(entered + gaveUp).toBe(4 * 4 * 15);
    const fences = await r.fences();
    expect(fences).toHaveLength(entered);
    expect(new Set(fences.map(String)).size).toBe(entered);
    // Nothing of the key is left in Redis once everyone left (its fencing counter aside).
    const keys = local.redisKeysOf('tenant:random');
    await waitFor(
      async () => (await redis.exists(keys.lock, keys.queue, keys.heartbeats, keys.holders, keys.shapes)) === 0,
      10_000,
      'no keys left',
    );
  }, 150_000);

  it('readers of 3 processes inside together; a writer waits for them, and a reader arriving behind the queued writer waits for it', async () => {
    const r = recorder('rw');
    const key = 'doc:rw';
    const [a, b, c, d] = all;
    const readers = [a, b, c].map((w) => ({ w, ...enter(w, { key, rec: r.rec, limit: 1000, shared: true }) }));
    await Promise.all(readers.map((x) => x.answer));
    expect(await r.inside()).toBe(3);

    const writer = enter(d, { key, rec: r.rec, limit: 1000 });
    await queued(key, 1);
    const late = enter(a, { key, rec: r.rec, limit: 1000, shared: true });
    await queued(key, 2);
    // Two readers leave: the third still holds, so the writer still waits.
    await release(readers[0].w, readers[0].id);
    await release(readers[1].w, readers[1].id);
    expect(entered(d, writer.id)).toBe(false);
    await release(readers[2].w, readers[2].id);
    expect((await writer.answer).type).toBe('entered');
    // The late reader queued behind the writer: it waits while the writer holds.
    await queued(key, 1);
    expect(entered(a, late.id)).toBe(false);
    await release(d, writer.id);
    expect((await late.answer).type).toBe('entered');
    await release(a, late.id);

    expect(await r.violations()).toBe(0);
    expect((await r.order()).slice(3)).toEqual([writer.id, late.id]);
    const fences = await r.fences();
    expect(new Set(fences.map(String)).size).toBe(5);
    expect(fences[4]).toBeGreaterThan(fences[3]);
    for (const reader of fences.slice(0, 3)) expect(fences[3]).toBeGreaterThan(reader);
  }, 60_000);

  it('a writer behind a stream of readers gets in once the readers ahead of it leave', async () => {
    const r = recorder('stream');
    const key = 'doc:stream';
    const [a, b, c] = all;
    // A reader holds, a writer queues, then readers of two processes queue behind the writer.
    const current = enter(a, { key, rec: r.rec, limit: 1000, shared: true });
    await current.answer;
    const writer = enter(c, { key, rec: r.rec, limit: 1000 });
    await queued(key, 1);
    const behind: { w: WorkerProcess; id: string; answer: Promise<WorkerMessage> }[] = [];
    for (let i = 0; i < 4; i++) {
      const w = i % 2 === 0 ? b : a;
      behind.push({ w, ...enter(w, { key, rec: r.rec, limit: 1000, shared: true }) });
    }
    await queued(key, 5);
    await release(a, current.id);
    expect((await writer.answer).type).toBe('entered');
    expect(behind.some((x) => entered(x.w, x.id))).toBe(false);
    await release(c, writer.id);
    await Promise.all(behind.map((x) => x.answer));
    expect(await r.inside()).toBe(4);
    for (const x of behind) await release(x.w, x.id);
    expect(await r.violations()).toBe(0);
  }, 60_000);

  it('tryAcquire on a full key is null; once a holder leaves, a try of another process gets the free place', async () => {
    const r = recorder('try');
    const key = 'tenant:try';
    const [a, b, c] = all;
    const first = enter(a, { key, rec: r.rec, limit: 2, concurrency: 2 });
    const second = enter(b, { key, rec: r.rec, limit: 2, concurrency: 2 });
    await Promise.all([first.answer, second.answer]);

    const tried = (id: string) => c.waitFor((m) => m.type === 'tried' && m.id === id);
    const full = tried('t1');
    c.send({ type: 'try', id: 't1', key, rec: r.rec, limit: 2, concurrency: 2 });
    expect((await full).fence).toBe('');
    expect(await local.tryAcquire(key, { concurrency: 2 })).toBeNull();
    expect(await local.tryAcquire(key)).toBeNull();

    await release(a, first.id);
    const free = tried('t2');
    c.send({ type: 'try', id: 't2', key, rec: r.rec, limit: 2, concurrency: 2 });
    const got = await free;
    expect(got.fence).not.toBe('');
    await release(c, 't2');
    await release(b, second.id);
    expect(await r.violations()).toBe(0);
  }, 60_000);

  it("a SIGKILLed holder's place reaches a waiter of another process within about a lease, while the other place stays held", async () => {
    const r = recorder('crash');
    const key = 'tenant:crash';
    const victim = doomed();
    const [a, b] = all;
    const dying = enter(victim, { key, rec: r.rec, limit: 2, concurrency: 2 });
    const staying = enter(a, { key, rec: r.rec, limit: 2, concurrency: 2 });
    await Promise.all([dying.answer, staying.answer]);
    const waiter = enter(b, { key, rec: r.rec, limit: 2, concurrency: 2, waitTimeoutMs: 20 * LEASE_MS });
    await queued(key, 1);
    const killedAt = performance.now();
    victim.kill('SIGKILL');
    await victim.exited;
    const got = await waiter.answer;
    const tookMs = performance.now() - killedAt;
    expect(got.type).toBe('entered');
    // The dead holder's lease ends within one lease of the kill (about 1,000 ms here); the rest of the
    // bound is the news reaching the waiter's process on a busy host, well short of its 20-lease budget.
    expect(tookMs).toBeLessThan(LEASE_MS + HEARTBEAT_MS);
    // The place it got was the dead one's: the other holder still holds.
    expect(entered(a, staying.id)).toBe(true);
    expect(BigInt(got.fence as string)).toBeGreaterThan(BigInt((await dying.answer).fence as string));
    await release(b, waiter.id);
    await release(a, staying.id);
  }, 60_000);

  it('a holder stalled past its lease loses its place to a waiter of another process, and its signal says so', async () => {
    const r = recorder('stall');
    const key = 'tenant:stall';
    const [a, b, c] = all;
    const stalling = enter(a, { key, rec: r.rec, limit: 2, concurrency: 2 });
    const staying = enter(b, { key, rec: r.rec, limit: 2, concurrency: 2 });
    await Promise.all([stalling.answer, staying.answer]);
    const waiter = enter(c, { key, rec: r.rec, limit: 2, concurrency: 2, waitTimeoutMs: 20 * LEASE_MS });
    await queued(key, 1);
    const stalled = a.waitForType('stalled', 30_000);
    a.send({ type: 'stall', ms: 6 * LEASE_MS });
    const got = await waiter.answer;
    expect(got.type).toBe('entered');
    // It got in while the stalled holder's process was still blocked, beside the other holder.
    expect(a.messages.some((m) => m.type === 'stalled')).toBe(false);
    expect(entered(b, staying.id)).toBe(true);
    await stalled;
    const lost = await a.waitFor((m) => m.type === 'lost' && m.id === stalling.id, 10_000);
    expect(lost.name).toBe('LockLostError');
    expect(BigInt(got.fence as string)).toBeGreaterThan(BigInt((await stalling.answer).fence as string));
    await release(c, waiter.id);
    await release(b, staying.id);
    await release(a, stalling.id);
  }, 60_000);

  it("a SIGKILLed reader's place frees within its lease: the writer queued behind it gets in about a lease after the kill", async () => {
    const r = recorder('crash-reader');
    const key = 'doc:crash';
    const victim = doomed();
    const [a, b] = all;
    const reader = enter(victim, { key, rec: r.rec, limit: 1000, shared: true });
    await reader.answer;
    const writer = enter(a, { key, rec: r.rec, limit: 1000, waitTimeoutMs: 20 * LEASE_MS });
    await queued(key, 1);
    // A reader queued behind the writer keeps the key's shapes alive with its heart-beats meanwhile.
    const next = enter(b, { key, rec: r.rec, limit: 1000, shared: true, waitTimeoutMs: 20 * LEASE_MS });
    await queued(key, 2);
    const killedAt = performance.now();
    victim.kill('SIGKILL');
    expect((await writer.answer).type).toBe('entered');
    expect(performance.now() - killedAt).toBeLessThan(LEASE_MS + HEARTBEAT_MS);
    await release(a, writer.id);
    expect((await next.answer).type).toBe('entered');
    await release(b, next.id);
    // Nothing of the dead reader is left: its shape went with its place (the holders' set outlived no entry of it).
    const { holders, shapes } = local.redisKeysOf(key);
    expect({ holders: await redis.exists(holders), shapes: await redis.hgetall(shapes) }).toEqual({ holders: 0, shapes: {} });
  }, 60_000);
});
