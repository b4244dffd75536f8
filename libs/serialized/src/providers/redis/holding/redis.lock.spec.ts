import { LockLostError } from '../../../errors/index';
import { DeadlineQueue } from '../../../internal/deadline.queue';
import { RedisLock, type RedisLockParts } from './redis.lock';
import { ExtendScript } from '../protocol/extend.script';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Call {
  script: string;
  args: (string | number)[];
  answer: (value: unknown) => void;
  fail: (error: unknown) => void;
}

/**
 * A Redis that records each script call and answers when the test says so, and a
 * local layer whose `released` records the lock and waits for the test's answer
 * (what the backend sends at release is `RedisBackend`'s, specified in redis.backend.spec.ts).
 */
function fakeContext() {
  const calls: Call[] = [];
  const script = (name: string) => ({
    run: (_client: unknown, args: (string | number)[]) => new Promise((answer, fail) => calls.push({ script: name, args, answer, fail })),
  });
  const released: RedisLock[] = [];
  const lines = {
    released: (lock: RedisLock) => {
      released.push(lock);
      return new Promise<void>((answer, fail) => calls.push({ script: 'release', args: [], answer: () => answer(), fail }));
    },
  };
  const context = {
    connection: { run: (_key: string, send: (client: unknown) => Promise<unknown>) => send({}) },
    // The real gateways over a recording Redis: the arguments are what the scripts get.
    scripts: {
      extend: new ExtendScript(script('extend')),
    },
    deadlines: new DeadlineQueue(),
    lines,
  } as unknown as RedisLockParts & { lines: typeof lines };
  const extends_ = () => calls.filter((c) => c.script === 'extend');
  return { context, calls, extends_, released };
}

const keys = { lock: 'p:{k}', queue: 'p:{k}:q', heartbeats: 'p:{k}:hb', fence: 'p:fence', holders: 'p:{k}:h', shapes: 'p:{k}:s' };
const make = (context: ReturnType<typeof fakeContext>['context'], leaseMs: number) =>
  new RedisLock(context, context.lines, 'k', keys, 'session:90:1.x', 7n, leaseMs, leaseMs, performance.now(), undefined);

describe('RedisLock', () => {
  it('renews about every third of the lease, owner-checked, with the full lease', async () => {
    const { context, extends_ } = fakeContext();
    // Renewals at ~100 ms and ~100 ms after the first reply: 50 ms of slack either side for a busy host.
    const lock = make(context, 300);
    await sleep(150);
    expect(extends_()).toHaveLength(1);
    expect(extends_()[0].args).toEqual(['p:{k}', 'session:90:1.x', 300, '7']);
    extends_()[0].answer(1);
    await sleep(150);
    expect(extends_()).toHaveLength(2);
    extends_()[1].answer(1);
    expect(lock.signal.aborted).toBe(false);
    context.deadlines.clear();
  });

  it('stops renewing synchronously on release, and releases once however often asked', async () => {
    const { context, calls, released } = fakeContext();
    const lock = make(context, 60);
    const first = lock.release();
    const second = lock.release();
    expect(second).toBe(first);
    calls.find((c) => c.script === 'release')!.answer([1]);
    await first;
    await sleep(100);
    expect(calls.filter((c) => c.script === 'extend')).toHaveLength(0);
    expect(released).toEqual([lock]);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  it('aborts its signal with LockLostError when a renewal finds the key no longer ours', async () => {
    const { context, extends_ } = fakeContext();
    // A lease long enough that a loaded host's late timers do not end it first (the renewal is due at ~200 ms).
    const lock = make(context, 600);
    while (extends_().length < 1) await sleep(5);
    extends_()[0].answer(0);
    await sleep(0);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as Error).message).toContain('"k"');
    await sleep(450);
    expect(extends_()).toHaveLength(1); // no renewals after the loss
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
  });

  it('a renewal in flight stands in for nothing: past the confirmed lease the lock reads lost, whatever the reply says later', async () => {
    const { context, extends_ } = fakeContext();
    // Renewal sent at ~100 ms; the confirmed lease ends at 300 ms.
    const lock = make(context, 300);
    await sleep(150);
    expect(extends_()).toHaveLength(1);
    expect(lock.lost).toBeUndefined();
    const until = performance.now() + 200; // the lease end passes while the reply is still unread
    while (performance.now() < until) {
      // a stall: no timer, no I/O
    }
    expect(lock.lost).toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
    extends_()[0].answer(1);
    await sleep(0);
    expect(lock.lost).toBeInstanceOf(LockLostError);
    await sleep(150);
    expect(extends_()).toHaveLength(1); // no renewal of a lost lock
    context.deadlines.clear();
  });

  it('the lease-end timer tells the holder even while a renewal is in flight', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 90);
    await sleep(40);
    expect(extends_()).toHaveLength(1); // unanswered
    const aborted = new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
    await aborted;
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    context.deadlines.clear();
  });

  it('a renewal that falls due after the lease ran out is not sent: the loss is declared at once', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 60);
    // Listened to before the stall (reading `signal` after it would find the loss by the clock).
    const lostWithoutReading = new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
    // The renewal (due at 20 ms) and the lease end (60 ms) pass during a stall; the first timer after it is the renewal's.
    const until = performance.now() + 100;
    while (performance.now() < until) {
      // a stall: no timer, no I/O
    }
    await lostWithoutReading;
    expect(extends_()).toHaveLength(0);
    expect((lock.signal.reason as Error).message).toMatch(/stalled/);
    context.deadlines.clear();
  });

  it('a successful renewal answered past the old lease end, with the holder not told meanwhile, keeps the lock', async () => {
    const { context, extends_ } = fakeContext();
    // The owner-checked success proves the key stayed ours throughout.
    const lock = make(context, 90);
    await sleep(40);
    expect(extends_()).toHaveLength(1);
    extends_()[0].answer(1);
    await sleep(0);
    expect(lock.lost).toBeUndefined();
    lock.release().catch(() => undefined);
    context.deadlines.clear();
  });

  it('extend() answered after the lease ran out and the holder was told stays lost', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 60);
    const extending = lock.extend(1000);
    const until = performance.now() + 80;
    while (performance.now() < until) {
      // a stall past the lease while the extension is on its way
    }
    expect(lock.lost).toBeInstanceOf(LockLostError);
    extends_()[0].answer(1);
    await expect(extending).rejects.toBeInstanceOf(LockLostError);
    expect(lock.lost).toBeInstanceOf(LockLostError);
    context.deadlines.clear();
  });

  it('keeps retrying a failing renewal while the lease lasts, then reports the loss with the cause', async () => {
    const { context, extends_ } = fakeContext();
    // A lease long enough for several retries even when a busy host delays timers.
    const lock = make(context, 1200);
    const cause = new Error('connection reset');
    const failAll = setInterval(() => extends_().forEach((c) => c.fail(cause)), 5);
    try {
      for (let waited = 0; !lock.signal.aborted && waited < 10_000; waited += 20) await sleep(20);
    } finally {
      clearInterval(failAll);
    }
    expect(extends_().length).toBeGreaterThan(1);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as Error).cause).toBe(cause);
  });

  it('a lease found run out by the clock after failed renewals reports their error, not a stall', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 90);
    await sleep(50);
    const cause = new Error('connection reset');
    extends_()[0].fail(cause);
    await sleep(0);
    // Read before the lease-end timer runs: the clock decides, and the renewals' failure is why.
    const until = performance.now() + 120;
    while (performance.now() < until) {
      // a stall: no timer, no I/O
    }
    const lost = lock.lost;
    expect(lost).toBeInstanceOf(LockLostError);
    expect((lost as Error).cause).toBe(cause);
    expect((lost as Error).message).not.toMatch(/stalled/);
    context.deadlines.clear();
  });

  it('extend(ms) sets the lease renewals keep from then on', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 60);
    const extending = lock.extend(300);
    extends_()[0].answer(1);
    await extending;
    expect(extends_()[0].args[2]).toBe(300);
    while (extends_().length < 2) await sleep(10);
    expect(extends_()[1].args[2]).toBe(300);
    extends_()[1].answer(1);
    context.deadlines.clear();
  });

  it('recheck() asks Redis at once with an owner-checked renewal; a key found gone aborts the signal', async () => {
    const { context, extends_ } = fakeContext();
    const lock = make(context, 30_000);
    expect(extends_()).toHaveLength(0); // next renewal 10 s away
    lock.recheck();
    lock.recheck(); // one question on the way is enough
    expect(extends_()).toHaveLength(1);
    expect(extends_()[0].args).toEqual(['p:{k}', 'session:90:1.x', 30_000, '7']);
    extends_()[0].answer(0);
    await sleep(0);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    lock.recheck();
    expect(extends_()).toHaveLength(1);
    context.deadlines.clear();
  });

  it('recheck() of a key still held renews it and keeps renewing from then on', async () => {
    const { context, extends_ } = fakeContext();
    // Next renewal ~300 ms after the recheck's reply, its lease 900 ms: room for a loaded host's late timers.
    const lock = make(context, 900);
    lock.recheck();
    extends_()[0].answer(1);
    await sleep(0);
    expect(lock.signal.aborted).toBe(false);
    while (extends_().length < 2) await sleep(5);
    extends_()[1].answer(1);
    expect(lock.signal.aborted).toBe(false);
    context.deadlines.clear();
  });

  it('abandon() aborts the signal with LockLostError at once and stops renewing; a released lock is left alone', async () => {
    const { context, extends_, calls } = fakeContext();
    const lock = make(context, 60);
    lock.abandon('the Redis connection ended');
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as Error).message).toContain('the Redis connection ended');
    await sleep(60);
    expect(extends_()).toHaveLength(0);
    const released = make(context, 60);
    const releasing = released.release();
    released.abandon('too late');
    expect(released.signal.aborted).toBe(false);
    calls.find((c) => c.script === 'release')!.answer([1]);
    await releasing;
  });
});
