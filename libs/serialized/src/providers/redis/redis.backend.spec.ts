import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import fc from 'fast-check';
import { LockTimeoutError } from '../../errors/index';
import { DeadlineQueue } from '../../internal/deadline.queue';
import type { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import { LockLines } from '../../local/lock.lines';
import type { Lock } from '../../lock.interface';
import type { RedisLock } from './holding/redis.lock';
import type { AcquireResult } from './protocol/acquire.script';
import { Floor } from './protocol/queue.floor';
import type { PassOnResult } from './protocol/hand-off.reply';
import type { HeartbeatResult } from './protocol/heartbeat.script';
import { OwnerTokens } from './protocol/owner.tokens';
import { RedisKeyspace } from './protocol/redis.keyspace';
import type { RedisScripts } from './protocol/redis.scripts';
import type { RedisCallOptions } from './transport/redis.call';
import type { RedisConnection } from './transport/redis.connection';
import { RedisBackend } from './redis.backend';

/**
 * The real backend under the real local layer, over a fake connection: every
 * script call waits until the test (or fast-check's scheduler) answers it, so the
 * order of replies, channel messages and aborts is the test's. Nothing here models
 * the waiters a second time: the assertions are on what callers and Redis would
 * see (locks, rejections, calls).
 */
interface Asked {
  readonly script: 'acquire' | 'leave' | 'heartbeat' | 'extend' | 'release';
  readonly token: string;
  readonly args: readonly unknown[];
  answer(reply: unknown): void;
  fail(error: unknown): void;
}

function setUp(options: { respondedAt?: () => number; maxLocalHandOffs?: number; listening?: boolean } = {}) {
  const asked: Asked[] = [];
  const ask = (script: Asked['script'], token: string, args: readonly unknown[]): Promise<never> =>
    new Promise((answer, fail) => asked.push({ script, token, args, answer: answer as (reply: unknown) => void, fail }));
  const unsent = new WeakSet<Error>();
  const subscriber = Object.assign(new EventEmitter(), {
    status: 'ready',
    subscribe: () => Promise.resolve(1),
    quit: () => Promise.resolve('OK'),
    disconnect: () => undefined,
  });
  const connection = {
    timeoutMs: 5000,
    run: (_key: string, send: (client: unknown) => Promise<unknown>, call?: RedisCallOptions) => {
      if (call?.skip?.()) {
        const error = new Error('gave up before it was sent');
        unsent.add(error);
        return Promise.reject(error);
      }
      return send({});
    },
    mayHaveRun: (error: unknown) => !(error instanceof Error && unsent.has(error)),
    answeredSince: () => true,
    createSubscriber: () => subscriber,
  } as unknown as RedisConnection;
  const scripts = {
    acquire: { run: (_c: unknown, args: { token: string; mode: string }) => ask('acquire', args.token, [args.mode]) },
    leave: { run: (_c: unknown, _keys: unknown, token: string) => ask('leave', token, []) },
    heartbeat: { run: (_c: unknown, _keys: unknown, tokens: string[]) => ask('heartbeat', '', tokens) },
    extend: { run: (_c: unknown, _lock: string, token: string, px: number) => ask('extend', token, [px]) },
    release: { run: (_c: unknown, _keys: unknown, token: string, served: string[], keep: number) => ask('release', token, [served, keep]) },
  } as unknown as RedisScripts;
  const deadlines = new DeadlineQueue({ unref: true });
  const stalls = {
    start: () => undefined,
    stop: () => undefined,
    respondedAt: options.respondedAt ?? (() => performance.now()),
  } as unknown as EventLoopStallMonitor;
  const tokens = new OwnerTokens();
  const backend: RedisBackend = new RedisBackend(
    {
      connection,
      scripts,
      keyspace: new RedisKeyspace('t', false),
      tokens,
      deadlines,
      stalls,
      heartbeatMs: 60_000,
      leaseMs: 30_000,
      handoff: 'strict',
      maxLocalHandOffs: options.maxLocalHandOffs ?? 0,
      logger: new Logger('test'),
    },
    () => lines,
  );
  const lines = new LockLines<RedisLock>(backend, { deadlines, trackHeld: true });
  // Listening from the start (a message before the subscription is lost, and the heart-beat finds what it said).
  if (options.listening !== false) (backend as unknown as { wakeUps: { ensure(): void } }).wakeUps.ensure();
  const wait = (waitTimeoutMs = 10_000, signal?: AbortSignal): Promise<Lock> => lines.acquire('k', { waitTimeoutMs, signal });
  const acquires = () => asked.filter((a) => a.script === 'acquire');
  const message = (text: string) => subscriber.emit('message', `t:wake:${tokens.session}`, text);
  const queued = (fence: number): AcquireResult => ({
    status: 'queued',
    fence,
    pttl: 20_000,
    handed: undefined,
    last: 0,
    floor: -Infinity,
  });
  const granted = (fence: number): AcquireResult => ({
    status: 'granted',
    fence,
    pttl: 30_000,
    handed: undefined,
    last: fence,
    floor: Floor.NONE,
  });
  return { backend, lines, asked, acquires, wait, message, queued, granted, deadlines, tokens };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const outcome = (promise: Promise<Lock>) => {
  const seen: { lock?: Lock; error?: unknown; settled: number } = { settled: 0 };
  promise.then(
    (lock) => Object.assign(seen, { lock, settled: seen.settled + 1 }),
    (error: unknown) => Object.assign(seen, { error, settled: seen.settled + 1 }),
  );
  return seen;
};

describe('RedisBackend under the local layer (the one writer of waiter state, over a fake connection)', () => {
  it('a hand-off message read at once runs at once: no question to Redis', async () => {
    const { acquires, asked, wait, message, queued, deadlines } = setUp();
    const w = outcome(wait());
    await tick();
    acquires()[0].answer(queued(5));
    await tick();
    message(`${acquires()[0].token} 7 5000 7 0`);
    await tick();
    expect(w.lock?.fencingToken).toBe(7n);
    expect(asked.filter((a) => a.script === 'extend')).toHaveLength(0);
    deadlines.clear();
  });

  it('a hand-off read after a stall past its lease runs only once Redis confirms it, with the lease counted from the question', async () => {
    let respondedAt = performance.now();
    const { acquires, asked, wait, message, queued, deadlines } = setUp({ respondedAt: () => respondedAt });
    const w = outcome(wait());
    await tick();
    acquires()[0].answer(queued(5));
    await tick();
    respondedAt -= 8000;
    message(`${acquires()[0].token} 7 5000 7 0`);
    await tick();
    const extend = asked.find((a) => a.script === 'extend')!;
    expect(extend.token).toBe(acquires()[0].token);
    expect(w.settled).toBe(0);
    extend.answer(true);
    await tick();
    expect(w.lock?.fencingToken).toBe(7n);
    expect((w.lock as RedisLock).leaseLeft()).toBeGreaterThan(29_000);
    deadlines.clear();
  });

  it('a hand-off Redis no longer confirms never runs: the waiter is sent again under a new token', async () => {
    const { acquires, asked, wait, message, queued, deadlines } = setUp({ respondedAt: () => performance.now() - 8000 });
    const w = outcome(wait());
    await tick();
    const first = acquires()[0].token;
    acquires()[0].answer(queued(5));
    await tick();
    message(`${first} 7 5000 7 0`);
    await tick();
    asked.find((a) => a.script === 'extend')!.answer(false);
    await tick();
    expect(w.settled).toBe(0);
    expect(acquires()).toHaveLength(2);
    expect(acquires()[1].token).not.toBe(first);
    deadlines.clear();
  });

  it('a waiter whose place was dropped while its process stalled waits again, or times out once its budget is spent', async () => {
    const { acquires, asked, wait, queued, backend, deadlines } = setUp();
    const w = outcome(wait(40));
    await tick();
    acquires()[0].answer(queued(5));
    await tick();
    backend.resync();
    await new Promise((resolve) => setTimeout(resolve, 60));
    const beat = asked.find((a) => a.script === 'heartbeat')!;
    beat.answer({
      owner: undefined,
      pttl: 1000,
      handed: undefined,
      ownerBlock: { fence: 0, last: 0, floor: 0 },
      missing: [acquires()[0].token],
    } satisfies HeartbeatResult);
    await tick();
    expect(w.error).toBeInstanceOf(LockTimeoutError);
    deadlines.clear();
  });

  it('a hand-off that comes in the tick its caller gave up is passed on, never run', async () => {
    const { acquires, asked, wait, message, queued, deadlines } = setUp();
    const abort = new AbortController();
    const w = outcome(wait(10_000, abort.signal));
    await tick();
    acquires()[0].answer(queued(5));
    await tick();
    const token = acquires()[0].token;
    abort.abort(new Error('gone'));
    message(`${token} 7 5000 7 0`);
    await tick();
    expect(w.error).toEqual(new Error('gone'));
    expect(asked.filter((a) => a.script === 'leave').map((a) => a.token)).toEqual([token]);
    deadlines.clear();
  });

  it('a holder notice read while the next acquire is on its way closes the place that acquire gets: no rider goes ahead of the waiter heard of (models/redis.pml, hmax)', async () => {
    // The interleaving SPIN found (docs/protocol.md, the rider-arrival defect): A holds
    // the key (W0) and sends W1's acquire; R, of process B, queues at 40 behind W1's
    // place and B's script tells A "<W0> 40"; A reads it before W1's reply (place 30)
    // comes, and W0 releases first. W2 then must not ride behind W1: R was heard of.
    const { acquires, asked, wait, message, queued, deadlines } = setUp({ maxLocalHandOffs: 2 });
    const w0 = outcome(wait());
    await tick();
    acquires()[0].answer(queued(10));
    await tick();
    // Handed with a block (a tenure) whose floor the script could not tell: nobody rides on it.
    message(`${acquires()[0].token} 20 5000 22 -1`);
    await tick();
    expect(w0.lock?.fencingToken).toBe(20n);
    const w1 = outcome(wait());
    await tick();
    expect(acquires()).toHaveLength(2);
    const t1 = acquires()[1].token;
    message(`${acquires()[0].token} 40`);
    await tick();
    const released = w0.lock!.release();
    await tick();
    asked
      .find((a) => a.script === 'release' && a.token === acquires()[0].token)!
      .answer({ status: 'released', handed: undefined } satisfies PassOnResult);
    await released;
    acquires()[1].answer(queued(30));
    await tick();
    const w2 = outcome(wait());
    await tick();
    // W1's place is closed to riders: W2 takes a place of its own (behind R's).
    expect(acquires()).toHaveLength(3);
    // Redis hands W1 the key (R, at 40, is the first waiter of another process), and W1 releases.
    message(`${t1} 50 5000 51 40`);
    await tick();
    expect(w1.lock?.fencingToken).toBe(50n);
    void w1.lock!.release();
    await tick();
    // Not served in-process ahead of R: W1's release goes to Redis.
    expect(w2.settled).toBe(0);
    expect(asked.some((a) => a.script === 'release' && a.token === t1)).toBe(true);
    deadlines.clear();
  });

  it('over any order of replies, hand-off messages and aborts: each caller settles once, no transition is refused, a key handed to a leaver is passed on', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
        async (s, n, aborts) => {
          const { acquires, asked, wait, message, queued, deadlines, lines } = setUp();
          const failures: unknown[] = [];
          const onUnhandled = (error: unknown) => failures.push(error);
          process.on('unhandledRejection', onUnhandled);
          try {
            const controllers = Array.from({ length: n }, () => new AbortController());
            const callers = controllers.map((c) => outcome(wait(10_000, c.signal)));
            await tick();
            const tokens = acquires().map((a) => a.token);
            // The first in the queue is handed the key by a message; the replies, the message and the aborts in any order.
            s.schedule(Promise.resolve()).then(() => message(`${tokens[0]} 100 5000 100 0`));
            acquires().forEach((a, i) => s.schedule(Promise.resolve()).then(() => a.answer(queued(10 + i))));
            controllers.forEach((c, i) => aborts[i] && s.schedule(Promise.resolve()).then(() => c.abort(new Error(`abort ${i}`))));
            await s.waitAll();
            await tick();
            // Every leave answers "nothing to pass on".
            for (const a of asked.filter((x) => x.script === 'leave'))
              a.answer({ status: 'none', handed: undefined } satisfies PassOnResult);
            await tick();
            expect(failures).toEqual([]);
            callers.forEach((c) => expect(c.settled).toBeLessThanOrEqual(1));
            const first = callers[0];
            // The first caller holds the key, or gave up and its key (or place) was left.
            if (first.lock) expect(first.lock.fencingToken).toBe(100n);
            else expect(asked.some((a) => a.script === 'leave' && a.token === tokens[0])).toBe(true);
            // Nobody else was handed anything.
            callers.slice(1).forEach((c) => expect(c.lock).toBeUndefined());
            // A caller that gave up with a place left it.
            callers.forEach(
              (c, i) => c.error && i > 0 && expect(asked.some((a) => a.script === 'leave' && a.token === tokens[i])).toBe(true),
            );
            expect(lines.heldCount).toBe(first.lock ? 1 : 0);
          } finally {
            process.off('unhandledRejection', onUnhandled);
            deadlines.clear();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("serves this process's waiters in their order at Redis, whatever order their acquire replies are read in", async () => {
    // Not listening yet (a new provider): nobody follows, all three acquires are on their way at once.
    const { acquires, asked, wait, message, queued, deadlines } = setUp({ maxLocalHandOffs: 8, listening: false });
    const order: number[] = [];
    // Each runs and lets go a tick later, in whatever order it is served.
    const callers = [0, 1, 2].map((i) =>
      wait().then(async (lock) => {
        order.push(i);
        await tick();
        await lock.release();
      }),
    );
    await tick();
    expect(acquires()).toHaveLength(3);
    const tokens = acquires().map((a) => a.token);
    // Redis queued them as sent (places 31, 32, 33); this process reads the last reply first (a
    // command sent before the connection was ready answers through more promise steps).
    acquires()[2].answer(queued(33));
    await tick();
    acquires()[0].answer(queued(31));
    await tick();
    acquires()[1].answer(queued(32));
    await tick();
    // The first is handed the key with a block of tokens and nobody of another process queued: a tenure.
    message(`${tokens[0]} 50 5000 60 0`);
    // The last one's release goes to Redis (nobody here waits any more).
    await new Promise<void>((resolve) => {
      const look = () => (asked.some((a) => a.script === 'release') ? resolve() : setImmediate(look));
      look();
    });
    asked.find((a) => a.script === 'release')!.answer({ status: 'released', handed: undefined } satisfies PassOnResult);
    await Promise.all(callers);
    expect(order).toEqual([0, 1, 2]);
    // Served in-process: one release reached Redis, the last one's.
    expect(asked.filter((a) => a.script === 'release')).toHaveLength(1);
    deadlines.clear();
  });

  it('dates a hand-off a release made by when the release was sent, not when its reply was read', async () => {
    const { acquires, asked, wait, queued, granted, deadlines } = setUp();
    const w1 = outcome(wait());
    const w2 = outcome(wait());
    await tick();
    acquires()[0].answer(granted(5));
    acquires()[1].answer(queued(6));
    await tick();
    const before = performance.now();
    const releasing = w1.lock!.release();
    const sentBy = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const handed = { member: acquires()[1].token, fence: 6, px: 5000, last: 6, floor: Floor.NONE };
    asked.find((a) => a.script === 'release')!.answer({ status: 'handed', handed } satisfies PassOnResult);
    await releasing;
    await tick();
    const readAt = performance.now();
    const left = (w2.lock as RedisLock).leaseLeft();
    // Counted from between `before` and `sentBy`, whenever the reply was read.
    expect(left).toBeLessThanOrEqual(sentBy + 5000 - readAt);
    expect(left).toBeGreaterThanOrEqual(before + 5000 - performance.now());
    deadlines.clear();
  });
});
