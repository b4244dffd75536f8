import { Floor } from '../protocol/floor';
import { performance } from 'node:perf_hooks';
import { LockBackendError, LockTimeoutError } from '../../../errors/index';
import type { EventLoopStallMonitor } from '../../../internal/event-loop-stall.monitor';
import type { Lock } from '../../../lock.interface';
import type { RedisConnection } from '../transport/redis-connection';
import { RedisGrantCheck } from './redis-grant-check';
import { RedisHandOffs, type HandOffHost } from './redis-hand-offs';
import { RedisKeyWaiters } from './redis-key-waiters';
import type { RedisScripts } from '../protocol/redis-scripts';
import { CONFIRMING, QUEUED, RedisWaiter, SENDING, SETTLED, type KeyWaiters } from './redis-waiter';

const keys = { lock: 'p:{k}', queue: 'p:{k}:q', heartbeats: 'p:{k}:hb', fence: 'p:fence' };

/** A provider and a Redis whose owner-checked extensions the test answers. */
function setUp(options: { respondedAt?: number } = {}) {
  const asked: { args: (string | number)[]; answer: (ok: number) => void; fail: (error: unknown) => void; sentAt: number }[] = [];
  const connection = {
    run: (_key: string, send: (client: unknown) => Promise<unknown>) => send({}),
  } as unknown as RedisConnection;
  const scripts = {
    extend: {
      run: (_client: unknown, ...args: (string | number)[]) =>
        new Promise((answer, fail) => asked.push({ args, answer, fail, sentAt: performance.now() })),
    },
  } as unknown as RedisScripts;
  const stalls = { respondedAt: () => options.respondedAt ?? performance.now() } as unknown as EventLoopStallMonitor;
  const waiters = new Map<string, RedisWaiter>();
  const events: string[] = [];
  const host: HandOffHost = {
    waiter: (token) => waiters.get(token),
    handedOver: (handOff, since) => handOffs.handedOver(handOff, since),
    noticed: (owner, place) => events.push(`noticed ${owner} ${place}`),
    settle: (waiter) => {
      if (waiter.phase === QUEUED) waiter.queue.unlink(waiter);
      waiter.phase = SETTLED;
      waiters.delete(waiter.token);
    },
    unplace: (waiter) => waiter.queue.unlink(waiter),
    leave: (_key, _keys, token) => events.push(`leave ${token}`),
    enqueueAgain: (waiter) => {
      waiters.delete(waiter.token);
      waiter.token += "'";
      waiters.set(waiter.token, waiter);
      events.push(`enqueue ${waiter.token}`);
    },
    lockFor: (waiter, fence, px, since) => ({ key: 'k', fencingToken: BigInt(fence), px, since, token: waiter.token }) as unknown as Lock,
  };
  const handOffs = new RedisHandOffs(host, new RedisGrantCheck(connection, scripts), stalls);
  const queue: KeyWaiters = new RedisKeyWaiters<RedisWaiter>('k', keys, { run: () => undefined });
  const waiter = (options: { leaseMs?: number; waitTimeoutMs?: number } = {}): RedisWaiter => {
    const w = new RedisWaiter(queue, `s:${options.leaseMs ?? 30_000}:${waiters.size}`, options.leaseMs ?? 30_000, options.waitTimeoutMs ?? 10_000, undefined, performance.now());
    w.phase = QUEUED;
    queue.link(w);
    waiters.set(w.token, w);
    w.promise.catch(() => undefined);
    return w;
  };
  const settled = async (w: RedisWaiter): Promise<unknown> => {
    const marker = Symbol('pending');
    return Promise.race([w.promise.then((lock) => lock, (error: unknown) => error), new Promise((r) => setImmediate(() => r(marker)))]).then(
      (value) => (value === marker ? 'pending' : value),
    );
  };
  return { handOffs, asked, waiter, events, settled };
}

describe('RedisHandOffs', () => {
  it('a hand-off read at once runs at once: no question to Redis', async () => {
    const { handOffs, asked, waiter, settled } = setUp();
    const w = waiter();
    handOffs.handedOver({ member: w.token, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now() - 10);
    expect(asked).toHaveLength(0);
    expect(await settled(w)).toMatchObject({ fencingToken: 7n, px: 5000 });
    expect(w.granted).toBe(true);
  });

  it('a message read after a stall past its lease runs only once Redis confirms, with the lease counted from the question', async () => {
    const { handOffs, asked, waiter, settled } = setUp({ respondedAt: performance.now() - 8000 });
    const w = waiter();
    const readAt = performance.now();
    handOffs.onMessage(`${w.token} 7 5000 7 -1`);
    expect(w.phase).toBe(CONFIRMING);
    expect(w.queue.queued).toBe(0);
    expect(asked.map((a) => a.args)).toEqual([[keys.lock, w.token, 30_000]]);
    // Notices of the same hand-off meanwhile change nothing.
    handOffs.handedOver({ member: w.token, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now() - 8000);
    expect(asked).toHaveLength(1);
    expect(await settled(w)).toBe('pending');
    asked[0].answer(1);
    const lock = (await settled(w)) as { fencingToken: bigint; px: number; since: number };
    expect(lock).toMatchObject({ fencingToken: 7n, px: 30_000 });
    // Counted from when the question was sent: after the message was read, not from the answer.
    expect(lock.since).toBeGreaterThanOrEqual(readAt);
    expect(lock.since).toBeLessThanOrEqual(asked[0].sentAt);
  });

  it('never runs on a hand-off that is no longer its own: it waits again under a new token', async () => {
    const { handOffs, asked, waiter, events, settled } = setUp();
    const w = waiter();
    const old = w.token;
    handOffs.handedOver({ member: old, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now() - 8000);
    asked[0].answer(0);
    expect(await settled(w)).toBe('pending');
    expect(w.phase).toBe(SENDING);
    expect(w.granted).toBe(false);
    expect(events).toEqual([`enqueue ${old}'`]);
    // A late notice for the old token finds nobody.
    handOffs.handedOver({ member: old, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now());
    expect(await settled(w)).toBe('pending');
  });

  it('times out instead of waiting again when its budget is spent', async () => {
    const { handOffs, asked, waiter, events, settled } = setUp();
    const w = waiter({ waitTimeoutMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    handOffs.handedOver({ member: w.token, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now() - 8000);
    asked[0].answer(0);
    expect(await settled(w)).toBeInstanceOf(LockTimeoutError);
    expect(events).toEqual([]);
  });

  it('when every answer comes back too late, passes the key on and waits again', async () => {
    const { handOffs, asked, waiter, events, settled } = setUp();
    const w = waiter({ leaseMs: 30 });
    const token = w.token;
    handOffs.handedOver({ member: token, fence: 7, px: 30, last: 7, floor: Floor.UNKNOWN }, performance.now() - 8000);
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20)); // a third of the lease and more
      asked[i].answer(1);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(asked).toHaveLength(3);
    expect(await settled(w)).toBe('pending');
    expect(events).toEqual([`leave ${token}`, `enqueue ${token}'`]);
  });

  it('fails closed when Redis cannot be asked, and passes on the key it may hold', async () => {
    const { handOffs, asked, waiter, events, settled } = setUp();
    const w = waiter();
    const token = w.token;
    handOffs.handedOver({ member: token, fence: 7, px: 5000, last: 7, floor: Floor.UNKNOWN }, performance.now() - 8000);
    asked[0].fail(new LockBackendError('Redis is unreachable', { key: 'k' }));
    expect(await settled(w)).toBeInstanceOf(LockBackendError);
    expect(events).toEqual([`leave ${token}`]);
  });

  it('a waiter whose place is gone (this process missed its heart-beats) takes a new one at the tail, never a LockBackendError', async () => {
    const { handOffs, waiter, events, settled } = setUp();
    const w = waiter();
    const old = w.token;
    handOffs.waitAgain(w, false);
    expect(w.queue.queued).toBe(0);
    expect(w.phase).toBe(SENDING);
    expect(events).toEqual([`enqueue ${old}'`]);
    expect(await settled(w)).toBe('pending');
  });
});
