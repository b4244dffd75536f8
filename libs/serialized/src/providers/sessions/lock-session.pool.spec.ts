import type { LockSession } from '../postgres/lock.session';
import { DeadlineQueue } from '../../internal/deadline.queue';
import { LockSessionPool, type SessionRequest, type PendingSession } from './lock-session.pool';

/** Just enough of a connection for the pool's bookkeeping. */
class FakeConnection {
  dead: Error | undefined;
  idleSince = 0;
  ended = false;
  uses = 0;
  exclusive = false;
  private listener: ((c: LockSession) => void) | undefined;
  constructor(readonly id: number) {}
  onDeath(listener: (c: LockSession) => void): void {
    this.listener = listener;
  }
  kill(reason: Error): void {
    if (this.dead) return;
    this.dead = reason;
    this.listener?.(this as unknown as LockSession);
  }
  async end(): Promise<void> {
    this.ended = true;
    this.dead ??= new Error('ended');
  }
  ref(): void {}
  unref(): void {}
}

const request = (timeoutMs = 10_000, shared = false): SessionRequest => ({
  shared,
  timeoutMs,
  timeoutError: () => new Error('timeout'),
  backendError: (cause) => new Error(`backend: ${(cause as Error).message}`),
});

const pending = (taken: LockSession | PendingSession<LockSession>): PendingSession<LockSession> => {
  if (!('promise' in taken)) throw new Error('expected to wait');
  return taken;
};

describe('LockSessionPool', () => {
  let deadlines: DeadlineQueue;
  let opened: FakeConnection[];
  let failNext: Error | undefined;
  const make = (size: number, usesPerSession?: number) =>
    new LockSessionPool(
      {
        size,
        usesPerSession,
        open: async () => {
          if (failNext) throw failNext;
          const session = new FakeConnection(opened.length);
          opened.push(session);
          return session as unknown as LockSession;
        },
        idleTimeoutMs: 60_000,
        retryAfterFailureMs: 200,
        closeTimeoutMs: 100,
      },
      deadlines,
    );

  beforeEach(() => {
    deadlines = new DeadlineQueue();
    opened = [];
    failNext = undefined;
  });
  afterEach(() => deadlines.clear());

  it('opens up to its size, then queues requests in arrival order', async () => {
    const pool = make(2);
    const a = await pending(pool.take(request())).promise;
    const b = await pending(pool.take(request())).promise;
    const order: number[] = [];
    const third = pending(pool.take(request())).promise.then((c) => (order.push(3), c));
    const fourth = pending(pool.take(request())).promise.then((c) => (order.push(4), c));
    expect(pool.total).toBe(2);
    expect(pool.waiting).toBe(2);
    pool.release(b);
    expect(await third).toBe(b);
    pool.release(a);
    expect(await fourth).toBe(a);
    expect(order).toEqual([3, 4]);
    expect(opened).toHaveLength(2);
  });

  it('reuses an idle connection at once, without a promise', async () => {
    const pool = make(1);
    const a = await pending(pool.take(request())).promise;
    pool.release(a);
    expect(pool.take(request())).toBe(a);
  });

  it("times a queued request out with the caller's error, and skips it afterwards", async () => {
    const pool = make(1);
    const a = await pending(pool.take(request())).promise;
    const late = pending(pool.take(request(50)));
    await expect(late.promise).rejects.toThrow('timeout');
    expect(pool.waiting).toBe(0);
    pool.release(a);
    expect(pool.idleCount).toBe(1);
  });

  it('withdraws a cancelled request', async () => {
    const pool = make(1);
    await pending(pool.take(request())).promise;
    const waiting = pending(pool.take(request()));
    const reason = new Error('gone');
    waiting.cancel(reason);
    await expect(waiting.promise).rejects.toBe(reason);
    expect(pool.waiting).toBe(0);
  });

  it('frees the slot of a discarded or dead connection and serves the queue with a new one', async () => {
    const pool = make(1);
    const a = await pending(pool.take(request())).promise;
    const next = pending(pool.take(request())).promise;
    (a as unknown as FakeConnection).kill(new Error('terminated'));
    const b = await next;
    expect(b).not.toBe(a);
    pool.discard(b, new Error('unlock failed'));
    expect(pool.total).toBe(0);
  });

  it('fails with the backend error when it cannot connect, then fails fast for a moment, then tries again', async () => {
    const pool = make(3);
    failNext = new Error('ECONNREFUSED');
    await expect(pending(pool.take(request())).promise).rejects.toThrow('backend: ECONNREFUSED');
    failNext = undefined;
    // Inside the fail-fast window: no new attempt.
    await expect(pending(pool.take(request())).promise).rejects.toThrow('backend: ECONNREFUSED');
    expect(opened).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 250));
    await expect(pending(pool.take(request())).promise).resolves.toBeDefined();
  });

  it('on close: rejects queued requests and ends busy connections when they come back', async () => {
    const pool = make(2);
    const a = (await pending(pool.take(request())).promise) as unknown as FakeConnection;
    const b = (await pending(pool.take(request())).promise) as unknown as FakeConnection;
    const queued = pending(pool.take(request()));
    await pool.close();
    await expect(queued.promise).rejects.toThrow(/closed/);
    pool.release(b as unknown as LockSession);
    expect(b.ended).toBe(true);
    expect(a.ended).toBe(false); // still out: a lock held past the grace period keeps its session
    pool.release(a as unknown as LockSession);
    expect(a.ended).toBe(true);
    await expect(pending(pool.take(request())).promise).rejects.toThrow(/closed/);
  });

  it('ends idle connections on close', async () => {
    const pool = make(2);
    const a = await pending(pool.take(request())).promise;
    pool.release(a);
    await pool.close();
    expect((a as unknown as FakeConnection).ended).toBe(true);
  });

  it('shares a session between shared uses up to its bound, and queues beyond it', async () => {
    const pool = make(1, 2);
    const a = await pending(pool.take(request(10_000, true))).promise;
    expect(pool.take(request(10_000, true))).toBe(a); // held locks and tries share the session
    const third = pending(pool.take(request(10_000, true)));
    expect(pool.waiting).toBe(1);
    pool.release(a);
    expect(await third.promise).toBe(a);
    expect(opened).toHaveLength(1);
  });

  it('gives a blocking wait a session of its own, and says which request ran out of time', async () => {
    const pool = make(1);
    const a = await pending(pool.take(request(10_000, true))).promise;
    // A session in shared use is not free for a wait that would block every statement behind it.
    const own = pending(pool.take(request(10_000, false)));
    expect(pool.waiting).toBe(1);
    pool.release(a);
    const got = await own.promise;
    expect(got).toBe(a);
    // While it waits there, a shared use finds no room and times out with its own error.
    await expect(pending(pool.take(request(50, true))).promise).rejects.toThrow('timeout');
    pool.share(got); // granted: shareable again
    expect(pool.take(request(10_000, true))).toBe(got);
  });
});
