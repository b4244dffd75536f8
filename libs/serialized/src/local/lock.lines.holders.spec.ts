import { LockBackendError, LockBusyError, LockTimeoutError } from '../errors';
import type { LineCaller } from './line.caller';
import type { LockBackend } from './lock-backend.interface';
import { LockLines } from './lock.lines';

/** A lock of the fake backend below: released through the lines, once. */
class FakeLock {
  private done = false;
  constructor(
    readonly key: string,
    readonly token: number,
    readonly shape: string,
    private readonly lines: () => LockLines<FakeLock>,
  ) {}
  release(): Promise<void> {
    if (this.done) return Promise.resolve();
    this.done = true;
    return this.lines().released(this);
  }
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ([resolve, reject] = [res, rej]));
  return { promise, resolve, reject };
}

/**
 * A backend asked on its turn that holds a key together (PostgreSQL's kind): each
 * `take` is answered by the test, and every ask and release is logged with the
 * shape the caller carried (`w` alone, `r` shared, `nN` up to N together).
 */
class TogetherBackend implements LockBackend<FakeLock> {
  readonly holdsTogether = true;
  readonly log: string[] = [];
  readonly asks: { caller: LineCaller<FakeLock>; answer: ReturnType<typeof deferred<FakeLock | null>> }[] = [];
  readonly releases: ReturnType<typeof deferred<undefined>>[] = [];
  asyncRelease = false;
  private token = 0;
  lines!: LockLines<FakeLock>;

  take(caller: LineCaller<FakeLock>): Promise<FakeLock | null> {
    this.log.push(`take ${shapeOf(caller)} ${caller.mode}`);
    const answer = deferred<FakeLock | null>();
    this.asks.push({ caller, answer });
    return answer.promise;
  }
  /** Grants the ask of the `n`th open ask (0: the oldest). */
  grant(n = 0): FakeLock {
    const [{ caller, answer }] = this.asks.splice(n, 1);
    const lock = new FakeLock(caller.key, ++this.token, shapeOf(caller), () => this.lines);
    answer.resolve(lock);
    return lock;
  }
  release(lock: FakeLock, handOn: boolean): undefined | Promise<undefined> {
    this.log.push(`release ${lock.shape}${lock.token} handOn=${handOn}`);
    if (!this.asyncRelease) return undefined;
    const reply = deferred<undefined>();
    this.releases.push(reply);
    return reply.promise;
  }
  timeoutError(key: string, waitTimeoutMs: number): Error {
    return new LockTimeoutError(key, waitTimeoutMs);
  }
  stopAsking(error: (key: string) => Error): void {
    for (const { caller, answer } of this.asks.splice(0)) answer.reject(error(caller.key));
  }
}

function shapeOf(caller: Pick<LineCaller<unknown>, 'limit' | 'shared'>): string {
  return caller.shared ? 'r' : caller.limit === 1 ? 'w' : `n${caller.limit}`;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function make(settings: ConstructorParameters<typeof LockLines>[1] = {}) {
  const backend = new TogetherBackend();
  const lines = new LockLines<FakeLock>(backend, { waitTimeoutMs: 60_000, ...settings });
  backend.lines = lines;
  return { backend, lines };
}

describe('LockLines with a backend asked on its turn that holds a key together', () => {
  it('lets callers ask one at a time, each on its own, in arrival order, up to the limit; a release goes back to the backend, then the next asks', async () => {
    const { backend, lines } = make();
    expect(lines.holdsTogether).toBe(true);
    const order: number[] = [];
    const calls = [1, 2, 3, 4].map((n) => lines.acquire('k', { concurrency: 2 }).then((lock) => (order.push(n), lock)));
    await tick();
    // One asks; the next asks once it is answered (grants, and their tokens, keep arrival order).
    expect(backend.asks.map(({ caller }) => shapeOf(caller))).toEqual(['n2']);
    expect(lines.waiting('k')).toBe(3);
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 4 });
    const first = backend.grant();
    expect(await calls[0]).toBe(first);
    await tick();
    expect(backend.asks).toHaveLength(1);
    const second = backend.grant();
    expect(await calls[1]).toBe(second);
    await tick();
    // Two hold: the others wait here, nobody asks.
    expect(backend.asks).toHaveLength(0);
    await first.release();
    await tick();
    expect(backend.log).toEqual(['take n2 wait', 'take n2 wait', 'release n21 handOn=false', 'take n2 wait']);
    backend.grant();
    await (await calls[2]).release();
    await tick();
    backend.grant();
    await (await calls[3]).release();
    await second.release();
    expect(order).toEqual([1, 2, 3, 4]);
    expect(lines.activeKeys).toBe(0);
    expect(lines.timerArmed).toBe(false);
  });

  it('a place is counted as taken until the backend answers its release', async () => {
    const { backend, lines } = make();
    backend.asyncRelease = true;
    const first = lines.acquire('k', { concurrency: 2 });
    const second = lines.acquire('k', { concurrency: 2 });
    const third = lines.acquire('k', { concurrency: 2 });
    await tick();
    backend.grant();
    await tick();
    backend.grant();
    const releasing = (await first).release();
    await tick();
    expect(backend.asks).toHaveLength(0);
    backend.releases.shift()!.resolve(undefined);
    await releasing;
    await tick();
    expect(backend.asks).toHaveLength(1);
    backend.grant();
    backend.asyncRelease = false;
    await (await second).release();
    await (await third).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('readers ask one after the other and hold together; a reader behind a queued writer waits for it; the writer asks once the readers ahead left', async () => {
    const { backend, lines } = make();
    const r1 = lines.acquire('k', { shared: true });
    const r2 = lines.acquire('k', { shared: true });
    const w = lines.acquire('k', {});
    const r3 = lines.acquire('k', { shared: true });
    await tick();
    const l1 = backend.grant();
    await tick();
    const l2 = backend.grant();
    await Promise.all([r1, r2]);
    await tick();
    expect(backend.log).toEqual(['take r wait', 'take r wait']);
    await l1.release();
    await tick();
    expect(backend.asks).toHaveLength(0);
    await l2.release();
    await tick();
    expect(backend.log.slice(-1)).toEqual(['take w wait']);
    const writer = backend.grant();
    expect(await w).toBe(writer);
    expect(lines.inspectHere('k')).toEqual({ holder: writer, waiting: 1 });
    await writer.release();
    await tick();
    // The writer's key is never handed in-process to a reader: it goes back, and the reader asks.
    expect(backend.log.slice(-2)).toEqual(['release w3 handOn=false', 'take r wait']);
    backend.grant();
    await (await r3).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a writer never asks beside holders, nor a reader beside a group; no mix lets in more than the smallest limit', async () => {
    const { backend, lines } = make();
    const three = lines.acquire('k', { concurrency: 3 });
    const two = lines.acquire('k', { concurrency: 2 });
    const fourth = lines.acquire('k', { concurrency: 3 });
    await tick();
    backend.grant();
    await tick();
    backend.grant();
    await tick();
    // n3 and n2 hold: two places, the smallest limit; the third waits without asking.
    expect(backend.log).toEqual(['take n3 wait', 'take n2 wait']);
    await (await three).release();
    await tick();
    expect(backend.log.slice(-1)).toEqual(['take n3 wait']);
    backend.grant();
    await (await two).release();
    await (await fourth).release();
    const reader = lines.acquire('k', { shared: true });
    const group = lines.acquire('k', { concurrency: 2 });
    await tick();
    expect(backend.log.slice(-1)).toEqual(['take r wait']);
    backend.grant();
    await (await reader).release();
    await tick();
    expect(backend.log.slice(-1)).toEqual(['take n2 wait']);
    backend.grant();
    await (await group).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a caller waiting in the backend behind another process holds the next ones back here; its grant lets them ask', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', { concurrency: 3 });
    await tick();
    expect(lines.waitsBehind('k', 10, backend.asks[0].caller)).toBeUndefined();
    const second = lines.acquire('k', { concurrency: 3 });
    const third = lines.acquire('k', { concurrency: 3 });
    await tick();
    expect(backend.asks).toHaveLength(1);
    expect(lines.waiting('k')).toBe(2);
    backend.grant();
    await first;
    await tick();
    expect(backend.asks).toHaveLength(1);
    backend.grant();
    await tick();
    backend.grant();
    for (const call of [first, second, third]) await (await call).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('maxPending counts the waiters here and the callers waiting behind another process, not the one asking nor the holders', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', { concurrency: 2, maxPending: 1 });
    const second = lines.acquire('k', { concurrency: 2, maxPending: 1 });
    await expect(lines.acquire('k', { concurrency: 2, maxPending: 1 })).rejects.toMatchObject({
      name: 'LockBusyError',
      reason: 'max-pending',
    });
    await tick();
    // The asking caller now waits behind another process: with it, the one in line is one too many.
    expect(lines.waitsBehind('k', 1, backend.asks[0].caller)).toBeUndefined();
    await expect(second).rejects.toBeInstanceOf(LockBusyError);
    backend.grant();
    await (await first).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a waiter that times out or aborts leaves at once; a writer that gives up lets the readers behind it ask', async () => {
    const { backend, lines } = make();
    const reader = lines.acquire('k', { shared: true });
    const gone = new AbortController();
    const writer = lines.acquire('k', { signal: gone.signal });
    const timed = lines.acquire('k', { concurrency: 2, waitTimeoutMs: 20 });
    const behind = lines.acquire('k', { shared: true });
    await tick();
    const held = backend.grant();
    await reader;
    await expect(timed).rejects.toBeInstanceOf(LockTimeoutError);
    expect(backend.asks).toHaveLength(0);
    gone.abort(new Error('client left'));
    await expect(writer).rejects.toThrow('client left');
    await tick();
    expect(backend.log).toEqual(['take r wait', 'take r wait']);
    backend.grant();
    await (await behind).release();
    await held.release();
    expect(lines.activeKeys).toBe(0);
    expect(lines.timerArmed).toBe(false);
  });

  it('a try enters only when nobody waits and the holders admit it; the backend answers a try that finds it full', async () => {
    const { backend, lines } = make();
    const held = lines.acquire('k', { concurrency: 2 });
    await tick();
    backend.grant();
    const lock = await held;
    await expect(lines.tryAcquire('k', {})).resolves.toBeNull();
    await expect(lines.tryAcquire('k', { shared: true })).resolves.toBeNull();
    const tried = lines.tryAcquire('k', { concurrency: 2 });
    await tick();
    expect(backend.log.slice(-1)).toEqual(['take n2 try']);
    backend.asks.shift()!.answer.resolve(null);
    await expect(tried).resolves.toBeNull();
    const waiter = lines.acquire('k', { concurrency: 2 });
    await tick();
    await expect(lines.tryAcquire('k', { concurrency: 2 })).resolves.toBeNull();
    backend.grant();
    await (await waiter).release();
    await lock.release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a try while a caller asks waits for its answer when a place would be left, and is refused at once when none would', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', { concurrency: 2 });
    await tick();
    let tried: FakeLock | null | undefined;
    const trying = lines.tryAcquire('k', { concurrency: 2 }).then((lock) => (tried = lock));
    await tick();
    expect([backend.asks.length, tried]).toEqual([1, undefined]);
    backend.grant();
    await first;
    await tick();
    expect(backend.log).toEqual(['take n2 wait', 'take n2 try']);
    // The try asks now: a third would make three, so it is refused without waiting.
    await expect(lines.tryAcquire('k', { concurrency: 2 })).resolves.toBeNull();
    backend.grant();
    await trying;
    expect(tried).not.toBeNull();
    await tried!.release();
    await (await first).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a refused ask (an error) answers its caller and lets the next one ask', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', { shared: true });
    const writer = lines.acquire('k', {});
    await tick();
    backend.asks.shift()!.answer.reject(new Error('backend down'));
    await expect(first).rejects.toThrow('backend down');
    await tick();
    expect(backend.log).toEqual(['take r wait', 'take w wait']);
    backend.grant();
    await (await writer).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('shutdown refuses newcomers, rejects waiters, ends asks in flight and waits for holders', async () => {
    const { backend, lines } = make({ shutdownGraceMs: 5_000 });
    const held = lines.acquire('k', { concurrency: 2 });
    const asking = lines.acquire('k', { concurrency: 2 });
    const waiting = lines.acquire('k', { concurrency: 2 });
    await tick();
    backend.grant();
    const lock = await held;
    const stopped = lines.stopTaking();
    await expect(asking).rejects.toBeInstanceOf(LockBackendError);
    await expect(waiting).rejects.toBeInstanceOf(LockBackendError);
    await expect(lines.acquire('k', { shared: true })).rejects.toBeInstanceOf(LockBackendError);
    await expect(lines.tryAcquire('k', { concurrency: 2 })).rejects.toBeInstanceOf(LockBackendError);
    expect(lines.heldCount).toBe(1);
    await lock.release();
    expect(await stopped).toBe(true);
    expect(lines.activeKeys).toBe(0);
  });

  it('a backend that does not say it holds a key together refuses such calls, naming the provider', async () => {
    const backend: LockBackend<FakeLock> = {
      take: () => Promise.resolve(null),
      release: () => undefined,
      timeoutError: (key, ms) => new LockTimeoutError(key, ms),
    };
    const lines = new LockLines<FakeLock>(backend, { name: 'SomeLockProvider' });
    expect(lines.holdsTogether).toBe(false);
    await expect(lines.acquire('k', { concurrency: 2 })).rejects.toThrow(/concurrency: 2 is not available on SomeLockProvider/);
    await expect(lines.tryAcquire('k', { shared: true })).rejects.toThrow(/shared: true is not available on SomeLockProvider/);
  });
});
