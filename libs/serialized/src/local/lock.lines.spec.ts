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
    private readonly lines: () => LockLines<FakeLock, Handed>,
  ) {}
  release(): Promise<void> {
    if (this.done) return Promise.resolve();
    this.done = true;
    return this.lines().released(this);
  }
}

interface Handed {
  readonly key: string;
  readonly token: number;
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ([resolve, reject] = [res, rej]));
  return { promise, resolve, reject };
}

/**
 * A backend that asks: each `take` is answered by the test (grant, busy, error), a
 * release hands on when allowed and `keep` says so, and everything asked is logged.
 */
class AskingBackend implements LockBackend<FakeLock, Handed> {
  readonly log: string[] = [];
  readonly asks: { caller: LineCaller<FakeLock>; answer: ReturnType<typeof deferred<FakeLock | null>> }[] = [];
  keep = false;
  releases: ReturnType<typeof deferred<Handed | undefined>>[] = [];
  asyncRelease = false;
  winding: Promise<void> | undefined;
  private token = 0;
  lines!: LockLines<FakeLock, Handed>;

  take(caller: LineCaller<FakeLock>): Promise<FakeLock | null> {
    this.log.push(`take ${caller.key} ${caller.mode}`);
    const answer = deferred<FakeLock | null>();
    this.asks.push({ caller, answer });
    return answer.promise;
  }
  /** Grants the oldest open ask. */
  grant(): FakeLock {
    const { caller, answer } = this.asks.shift()!;
    const lock = new FakeLock(caller.key, ++this.token, () => this.lines);
    answer.resolve(lock);
    return lock;
  }
  windingDown(): Promise<void> | undefined {
    return this.winding;
  }
  release(lock: FakeLock, handOn: boolean): Handed | undefined | Promise<Handed | undefined> {
    this.log.push(`release ${lock.key} handOn=${handOn}`);
    const handed = handOn && this.keep ? { key: lock.key, token: ++this.token } : undefined;
    if (!this.asyncRelease) return handed;
    const reply = deferred<Handed | undefined>();
    this.releases.push(reply);
    return reply.promise.then(() => handed);
  }
  adopt(handed: Handed): FakeLock {
    this.log.push(`adopt ${handed.key} ${handed.token}`);
    return new FakeLock(handed.key, handed.token, () => this.lines);
  }
  giveBack(handed: Handed): Promise<void> {
    this.log.push(`give back ${handed.key}`);
    return Promise.resolve();
  }
  timeoutError(key: string, waitTimeoutMs: number): Error {
    return new LockTimeoutError(key, waitTimeoutMs);
  }
  stopAsking(error: (key: string) => Error): void {
    for (const { caller, answer } of this.asks.splice(0)) answer.reject(error(caller.key));
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function make(settings: ConstructorParameters<typeof LockLines>[1] = {}) {
  const backend = new AskingBackend();
  const lines = new LockLines<FakeLock, Handed>(backend, { waitTimeoutMs: 60_000, ...settings });
  backend.lines = lines;
  return { backend, lines };
}

describe('LockLines (the local layer)', () => {
  it('lets one caller per key ask the backend, the others wait here in arrival order', async () => {
    const { backend, lines } = make();
    const order: number[] = [];
    const calls = [1, 2, 3].map((n) => lines.acquire('k', {}).then((lock) => (order.push(n), lock)));
    await tick();
    expect(backend.asks).toHaveLength(1);
    expect(lines.waiting('k')).toBe(2);
    for (let n = 0; n < 3; n++) {
      backend.grant();
      const lock = await calls[n];
      await lock.release();
      await tick();
    }
    expect(order).toEqual([1, 2, 3]);
    expect(lines.activeKeys).toBe(0);
    expect(lines.timerArmed).toBe(false);
  });

  it('maxPending counts waiters, not the caller asking nor the holder; one waiting in the backend behind another process counts', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', { maxPending: 1 });
    const second = lines.acquire('k', { maxPending: 1 });
    await expect(lines.acquire('k', { maxPending: 1 })).rejects.toMatchObject({ name: 'LockBusyError', reason: 'max-pending' });
    // The asking caller now waits behind another process: it is a waiter, so the one here is one too many.
    expect(lines.waitsBehind('k', 1)).toBeUndefined();
    await expect(second).rejects.toBeInstanceOf(LockBusyError);
    expect(lines.waitsBehind('k', 0)).toBeInstanceOf(LockBusyError);
    backend.grant();
    await (await first).release();
  });

  it('a waiter that times out or aborts leaves its place at once and the next keeps its order', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', {});
    const gone = new AbortController();
    const aborted = lines.acquire('k', { signal: gone.signal });
    const timed = lines.acquire('k', { waitTimeoutMs: 20 });
    const last = lines.acquire('k', {});
    gone.abort(new Error('client left'));
    await expect(aborted).rejects.toThrow('client left');
    await expect(timed).rejects.toBeInstanceOf(LockTimeoutError);
    expect(lines.waiting('k')).toBe(1);
    backend.grant();
    await (await first).release();
    await tick();
    backend.grant();
    await (await last).release();
    expect(lines.activeKeys).toBe(0);
  });

  it("a try waits for its own process's release in flight, then finds the key free; with a waiter it is refused", async () => {
    const { backend, lines } = make();
    backend.asyncRelease = true;
    const first = lines.acquire('k', {});
    backend.grant();
    const lock = await first;
    const releasing = lock.release();
    const tried = lines.tryAcquire('k', {});
    await tick();
    expect(backend.asks).toHaveLength(0); // not asked before the release is answered
    backend.releases.shift()!.resolve(undefined);
    await releasing;
    await tick();
    expect(backend.asks.map((ask) => ask.caller.mode)).toEqual(['try']);
    backend.grant();
    const again = (await tried)!;
    const waiter = lines.acquire('k', {});
    expect(await lines.tryAcquire('k', {})).toBeNull();
    const done = again.release();
    backend.releases.shift()!.resolve(undefined);
    await done;
    await tick();
    backend.grant();
    backend.asyncRelease = false;
    await (await waiter).release();
  });

  it('hands the key on in-process up to the bound, then the next caller asks the backend', async () => {
    const { backend, lines } = make({ maxLocalHandOffs: 2 });
    backend.keep = true;
    const calls = [0, 1, 2, 3].map(() => lines.acquire('k', {}));
    await tick();
    backend.grant();
    for (const call of calls.slice(0, 3)) await (await call).release();
    await tick();
    expect(backend.log).toEqual([
      'take k wait',
      'release k handOn=true',
      'adopt k 2',
      'release k handOn=true',
      'adopt k 3',
      'release k handOn=false', // the bound: two in a row
      'take k wait',
    ]);
    backend.grant();
    await (await calls[3]).release();
  });

  it('a key kept for callers who all gave up meanwhile goes back to the backend', async () => {
    const { backend, lines } = make({ maxLocalHandOffs: 5 });
    backend.keep = true;
    backend.asyncRelease = true;
    const first = lines.acquire('k', {});
    const gone = new AbortController();
    const waiter = lines.acquire('k', { signal: gone.signal });
    backend.grant();
    const releasing = (await first).release();
    gone.abort(new Error('left'));
    await expect(waiter).rejects.toThrow('left');
    backend.releases.shift()!.resolve(undefined);
    await releasing;
    await tick();
    expect(backend.log.slice(-2)).toEqual(['release k handOn=true', 'give back k']);
    expect(lines.activeKeys).toBe(0);
  });

  it('after a refused ask the next caller asks only once the backend has wound down', async () => {
    const { backend, lines } = make();
    const first = lines.acquire('k', {});
    const second = lines.acquire('k', {});
    const winding = deferred<void>();
    backend.winding = winding.promise;
    backend.asks.shift()!.answer.reject(new Error('backend down'));
    await expect(first).rejects.toThrow('backend down');
    await tick();
    expect(backend.asks).toHaveLength(0);
    backend.winding = undefined;
    winding.resolve();
    await tick();
    expect(backend.asks).toHaveLength(1);
    backend.grant();
    await (await second).release();
  });

  it('a caller handed the key in the tick it aborted passes it on without running', async () => {
    const { backend, lines } = make({ maxLocalHandOffs: 5 });
    backend.keep = true;
    const first = lines.acquire('k', {});
    const gone = new AbortController();
    const aborted = lines.acquire('k', { signal: gone.signal });
    const next = lines.acquire('k', {});
    backend.grant();
    const lock = await first;
    void lock.release();
    gone.abort(new Error('client left'));
    await expect(aborted).rejects.toThrow('client left');
    const handed = await next;
    expect(handed.token).toBeGreaterThan(lock.token);
    await handed.release();
    expect(lines.activeKeys).toBe(0);
  });

  it('maxPendingTotal bounds the waiters of every key together', async () => {
    const { backend, lines } = make({ maxPendingTotal: 1 });
    const a = lines.acquire('a', {});
    const b = lines.acquire('b', {});
    const waitsA = lines.acquire('a', {});
    await expect(lines.acquire('b', {})).rejects.toMatchObject({ reason: 'max-pending-total' });
    backend.grant();
    backend.grant();
    await (await a).release();
    await (await b).release();
    await tick();
    backend.grant();
    await (await waitsA).release();
  });

  it('inspectHere: the holder through grants, local hand-offs and releases, the caller asking and those in line counted as waiting', async () => {
    const { backend, lines } = make({ maxLocalHandOffs: 1 });
    backend.keep = true;
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 0 });
    const first = lines.acquire('k', {});
    const second = lines.acquire('k', {});
    // One asks the backend, one waits in line: both wait, nobody holds.
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 2 });
    const granted = backend.grant();
    expect(await first).toBe(granted);
    expect(lines.inspectHere('k')).toEqual({ holder: granted, waiting: 1 });
    await granted.release();
    const handed = await second;
    expect(handed.token).toBe(2);
    expect(lines.inspectHere('k')).toEqual({ holder: handed, waiting: 0 });
    await handed.release();
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 0 });
    expect(lines.activeKeys).toBe(0);
  });

  it('shutdown refuses newcomers, rejects waiters, ends asks in flight and waits for holders', async () => {
    const { backend, lines } = make({ shutdownGraceMs: 5_000 });
    const held = lines.acquire('a', {});
    const waiting = lines.acquire('a', {});
    const asking = lines.acquire('b', {});
    backend.grant();
    const lock = await held;
    const stopped = lines.stopTaking();
    await expect(waiting).rejects.toBeInstanceOf(LockBackendError);
    await expect(asking).rejects.toBeInstanceOf(LockBackendError);
    await expect(lines.acquire('c', {})).rejects.toBeInstanceOf(LockBackendError);
    await expect(lines.tryAcquire('c', {})).rejects.toBeInstanceOf(LockBackendError);
    await lock.release();
    expect(await stopped).toBe(true);
    expect(lines.activeKeys).toBe(0);
  });
});

describe('LockLines with a backend that has nothing to ask', () => {
  const inProcess = () => {
    let token = 0;
    const backend: LockBackend<FakeLock> = {
      takeNow: (key) => new FakeLock(key, ++token, () => lines as unknown as LockLines<FakeLock, Handed>),
      take: (caller) => new FakeLock(caller.key, ++token, () => lines as unknown as LockLines<FakeLock, Handed>),
      release: () => undefined,
      timeoutError: (key, ms) => new LockTimeoutError(key, ms),
    };
    const lines = new LockLines<FakeLock>(backend, {});
    return lines;
  };

  it('grants a free key synchronously and hands it to the next waiter at release, before release returns', async () => {
    const lines = inProcess();
    const now = lines.acquireNow('k', undefined, undefined)!;
    expect(now.token).toBe(1);
    expect(lines.acquireNow('k', undefined, undefined)).toBeUndefined();
    let next: FakeLock | undefined;
    const waiting = lines.acquire('k', {}).then((lock) => (next = lock));
    await now.release();
    await waiting;
    expect(next!.token).toBe(2);
    await next!.release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a holder waiting elsewhere (transaction mode: inside the server) counts as a waiter until it arrives or lets go', async () => {
    const lines = inProcess();
    const busy = { name: 'LockBusyError', reason: 'max-pending' };
    const holder = lines.acquireNow('k', undefined, undefined)!;
    // Two waiters in line, then the holder starts to wait elsewhere: the newest is one too many.
    const first = lines.acquire('k', { maxPending: 2 });
    const second = lines.acquire('k', { maxPending: 2 });
    expect(lines.holderWaitsBehind(holder, 2)).toBeUndefined();
    await expect(second).rejects.toMatchObject(busy);
    await expect(lines.acquire('k', { maxPending: 2 })).rejects.toMatchObject(busy);
    // It got the key where it waited: a holder again, not counted.
    lines.holderArrived(holder);
    const third = lines.acquire('k', { maxPending: 2 });
    await holder.release();
    const next = await first;
    // Held with nobody waiting (its entry is the lock itself), and none may wait: the holder may not either.
    expect(lines.holderWaitsBehind(next, 0)).toMatchObject(busy);
    await next.release();
    const last = await third;
    const behindLast = lines.acquire('k', { maxPending: 2 });
    expect(lines.holderWaitsBehind(last, 2)).toBeUndefined();
    await expect(lines.acquire('k', { maxPending: 2 })).rejects.toMatchObject(busy);
    // It gave up where it waited: letting go here ends its count, and the key's next holder is not counted.
    await last.release();
    const after = await behindLast;
    const waiter = lines.acquire('k', { maxPending: 1 });
    await after.release();
    await (await waiter).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('shared holders waiting elsewhere count as waiters, each until it arrives or lets go; one beyond maxPending is refused', async () => {
    const lines = inProcess();
    const busy = { name: 'LockBusyError', reason: 'max-pending' };
    const readers = await Promise.all([0, 1, 2].map(() => lines.acquire('k', { shared: true })));
    // A writer waits in line behind the readers; then two readers start to wait elsewhere.
    const writer = lines.acquire('k', { maxPending: 2 });
    expect(lines.holderWaitsBehind(readers[0], 2)).toBeUndefined();
    expect(lines.holderWaitsBehind(readers[1], 2)).toBeUndefined();
    // Two of this process wait already: the writer in line is one too many, and so is a third reader.
    await expect(writer).rejects.toMatchObject(busy);
    expect(lines.holderWaitsBehind(readers[2], 2)).toMatchObject(busy);
    await expect(lines.acquire('k', { maxPending: 2 })).rejects.toMatchObject(busy);
    // One arrived (it holds where it waited), one let go: neither counts any more.
    lines.holderArrived(readers[0]);
    await readers[1].release();
    const writers = [lines.acquire('k', { maxPending: 2 }), lines.acquire('k', { maxPending: 2 })];
    await expect(lines.acquire('k', { maxPending: 2 })).rejects.toMatchObject(busy);
    await readers[0].release();
    await readers[2].release();
    for (const waiting of writers) await (await waiting).release();
    expect(lines.activeKeys).toBe(0);
  });

  it('inspectHere finds the holder of a key taken at once (its entry is the lock) and after a waiter gave it a line', async () => {
    const lines = inProcess();
    const now = lines.acquireNow('k', undefined, undefined)!;
    expect(lines.inspectHere('k')).toEqual({ holder: now, waiting: 0 });
    await expect(lines.tryAcquire('k', {})).resolves.toBeNull();
    let next: FakeLock | undefined;
    const waiting = lines.acquire('k', {}).then((lock) => (next = lock));
    expect(lines.inspectHere('k')).toEqual({ holder: now, waiting: 1 });
    await now.release();
    await waiting;
    expect(lines.inspectHere('k')).toEqual({ holder: next, waiting: 0 });
    await next!.release();
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 0 });
    expect(lines.activeKeys).toBe(0);
  });
});

/**
 * A backend whose callers ask on arrival (Redis): every `take` is answered by the
 * test, a withdrawal and a look at an overdue caller are logged, and a release is
 * answered by the test too.
 */
class ArrivalBackend implements LockBackend<FakeLock> {
  readonly asksOn = 'arrival';
  readonly log: string[] = [];
  readonly asks: { caller: LineCaller<FakeLock>; answer: ReturnType<typeof deferred<FakeLock | null>> }[] = [];
  readonly releases: ReturnType<typeof deferred<undefined>>[] = [];
  /** What `overdue` answers (undefined: the caller times out). */
  lookAgainMs: number | undefined;
  private token = 0;
  lines!: LockLines<FakeLock>;

  take(caller: LineCaller<FakeLock>): Promise<FakeLock | null> {
    this.log.push(`take ${caller.mode}`);
    const answer = deferred<FakeLock | null>();
    this.asks.push({ caller, answer });
    return answer.promise;
  }
  /** A waiter: answered through its caller, when the test settles its ask. */
  askOnArrival(caller: LineCaller<FakeLock>): void {
    void this.take(caller).then(
      (lock) => caller.granted(lock!),
      (error: unknown) => caller.refused(error),
    );
  }
  /** Grants the ask of the `n`th caller (0: the oldest still open). */
  grant(n = 0): FakeLock {
    const [{ caller, answer }] = this.asks.splice(n, 1);
    const lock = new FakeLock(caller.key, ++this.token, () => this.lines);
    answer.resolve(lock);
    return lock;
  }
  /** Grants the `n`th caller at once, as a backend event (no promise between). */
  grantNow(n = 0): FakeLock {
    const [{ caller }] = this.asks.splice(n, 1);
    const lock = new FakeLock(caller.key, ++this.token, () => this.lines);
    caller.granted(lock);
    return lock;
  }
  withdraw(caller: LineCaller<FakeLock>): void {
    this.log.push(`withdraw ${caller.key}`);
  }
  overdue(): number | undefined {
    this.log.push('overdue');
    const again = this.lookAgainMs;
    this.lookAgainMs = undefined;
    return again;
  }
  release(lock: FakeLock): Promise<undefined> {
    this.log.push(`release ${lock.token}`);
    const reply = deferred<undefined>();
    this.releases.push(reply);
    return reply.promise;
  }
  timeoutError(key: string, waitTimeoutMs: number): Error {
    return new LockTimeoutError(key, waitTimeoutMs);
  }
}

function arriving(settings: ConstructorParameters<typeof LockLines>[1] = {}) {
  const backend = new ArrivalBackend();
  const lines = new LockLines<FakeLock>(backend, { waitTimeoutMs: 60_000, ...settings });
  backend.lines = lines;
  return { backend, lines };
}

describe('LockLines with a backend whose callers ask on arrival', () => {
  it('every caller asks at once; the key goes where the backend says, and the line leaves nothing behind', async () => {
    const { backend, lines } = arriving();
    const calls = [lines.acquire('k', {}), lines.acquire('k', {}), lines.acquire('k', {})];
    expect(backend.log).toEqual(['take wait', 'take wait', 'take wait']);
    expect(lines.inspectHere('k')).toEqual({ holder: undefined, waiting: 3 });
    // The backend's own order: the second caller first.
    const second = backend.grant(1);
    await expect(calls[1]).resolves.toBe(second);
    expect(lines.inspectHere('k')).toEqual({ holder: second, waiting: 2 });
    const releasing = second.release();
    backend.releases[0].resolve(undefined);
    await releasing;
    backend.grant();
    backend.grant();
    for (const lock of await Promise.all([calls[0], calls[2]])) {
      const done = lock.release();
      backend.releases.at(-1)!.resolve(undefined);
      await done;
    }
    expect(lines.heldCount).toBe(0);
    expect(lines.activeKeys).toBe(0);
    expect(lines.timerArmed).toBe(false);
  });

  it('maxPending counts the callers asking, not the holder; without a holder here one more is let through', async () => {
    const { backend, lines } = arriving();
    const first = lines.acquire('k', { maxPending: 1 });
    const second = lines.acquire('k', { maxPending: 1 });
    await expect(lines.acquire('k', { maxPending: 1 })).rejects.toMatchObject({ name: 'LockBusyError', reason: 'max-pending' });
    const holder = backend.grant();
    await first;
    // One holder, one waiter: the bound is reached.
    await expect(lines.acquire('k', { maxPending: 1 })).rejects.toBeInstanceOf(LockBusyError);
    expect(backend.log.filter((entry) => entry.startsWith('take'))).toHaveLength(2);
    const releasing = holder.release();
    backend.releases[0].resolve(undefined);
    await releasing;
    const next = backend.grant();
    await expect(second).resolves.toBe(next);
    const done = next.release();
    backend.releases[1].resolve(undefined);
    await done;
    expect(lines.activeKeys).toBe(0);
  });

  it('waitsThere: maxPending counts the callers the backend keeps waiting, from then until they hold the key or leave', async () => {
    const { backend, lines } = arriving();
    const calls = [lines.acquire('k', { maxPending: 1 }), lines.acquire('k', { maxPending: 1 })];
    const [first, second] = backend.asks.map((ask) => ask.caller);
    expect(lines.waitsThere(first)).toBeUndefined();
    // Counted once: the backend sending it anew (a ride that ended, a lost hand-off) asks again and keeps its count.
    expect(lines.waitsThere(first)).toBeUndefined();
    expect(lines.waitsThere(second)).toMatchObject({ name: 'LockBusyError', reason: 'max-pending', maxPending: 1 });
    // A grant is told as the backend's event, not a promise later: the next caller asking in that same event may wait.
    const holder = backend.grantNow(0);
    expect(lines.waitsThere(second)).toBeUndefined();
    await expect(calls[0]).resolves.toBe(holder);
    // A newcomer while this process holds the key and one waits: refused on arrival.
    await expect(lines.acquire('k', { maxPending: 1 })).rejects.toMatchObject({ reason: 'max-pending' });
    // A counted caller that leaves (its budget, an abort) stops counting.
    const abort = new AbortController();
    const third = lines.acquire('k', { maxPending: 2, signal: abort.signal });
    const thirdCaller = backend.asks.at(-1)!.caller;
    expect(lines.waitsThere(thirdCaller)).toBeUndefined();
    abort.abort(new Error('gone'));
    await expect(third).rejects.toEqual(new Error('gone'));
    backend.asks.splice(
      backend.asks.findIndex((ask) => ask.caller === thirdCaller),
      1,
    );
    const fourth = lines.acquire('k', { maxPending: 2 });
    expect(lines.waitsThere(backend.asks.at(-1)!.caller)).toBeUndefined();
    // Everyone runs in turn, and nothing is left.
    for (const [n, call] of [calls[1], fourth].entries()) {
      const releasing = (n === 0 ? holder : await calls[1]).release();
      backend.releases[n].resolve(undefined);
      await releasing;
      await expect(call).resolves.toBe(backend.grantNow(0));
    }
    const done = (await fourth).release();
    backend.releases[2].resolve(undefined);
    await done;
    expect(lines.activeKeys).toBe(0);
  });

  it('maxPendingTotal: a caller past the cap takes only a free key (a try), and its place is given back when a waiter leaves', async () => {
    const { backend, lines } = arriving({ maxPendingTotal: 1 });
    const waiter = lines.acquire('a', {});
    const refused = lines.acquire('b', {});
    expect(backend.log).toEqual(['take wait', 'take try']);
    backend.asks[1].answer.resolve(null);
    await expect(refused).rejects.toMatchObject({ name: 'LockBusyError', reason: 'max-pending-total' });
    backend.asks[0].answer.reject(new LockBackendError('gone', { key: 'a' }));
    await expect(waiter).rejects.toBeInstanceOf(LockBackendError);
    const again = lines.acquire('b', {});
    expect(backend.log.at(-1)).toBe('take wait');
    backend.asks[2].answer.reject(new LockBackendError('gone', { key: 'b' }));
    await expect(again).rejects.toBeInstanceOf(LockBackendError);
    expect(lines.activeKeys).toBe(0);
  });

  it('an overdue caller the backend cannot judge yet is looked at again; then it times out and is withdrawn', async () => {
    const { backend, lines } = arriving();
    backend.lookAgainMs = 5;
    const caller = lines.acquire('k', { waitTimeoutMs: 5 });
    await expect(caller).rejects.toBeInstanceOf(LockTimeoutError);
    expect(backend.log).toEqual(['take wait', 'overdue', 'overdue', 'withdraw k']);
    // Its answer, coming after it left, is a key it passes on.
    backend.grant();
    await tick();
    expect(backend.log.at(-1)).toBe('release 1');
    backend.releases[0].resolve(undefined);
    await tick();
    expect(lines.heldCount).toBe(0);
    expect(lines.activeKeys).toBe(0);
  });

  it('an aborted caller is withdrawn and rejected with the reason; a key answered in that tick is passed on', async () => {
    const { backend, lines } = arriving();
    const abort = new AbortController();
    const caller = lines.acquire('k', { signal: abort.signal });
    backend.grant();
    abort.abort(new Error('gone'));
    await expect(caller).rejects.toEqual(new Error('gone'));
    expect(backend.log).toEqual(['take wait', 'withdraw k', 'release 1']);
    backend.releases[0].resolve(undefined);
    await tick();
    expect(lines.activeKeys).toBe(0);
  });

  it("a try waits for this process's own release in flight, then asks", async () => {
    const { backend, lines } = arriving();
    const holding = lines.acquire('k', {});
    const lock = backend.grant();
    await holding;
    void lock.release();
    const trying = lines.tryAcquire('k', {});
    await tick();
    expect(backend.log).toEqual(['take wait', 'release 1']);
    backend.releases[0].resolve(undefined);
    await tick();
    expect(backend.log.at(-1)).toBe('take try');
    const taken = backend.grant();
    await expect(trying).resolves.toBe(taken);
    expect(lines.inspectHere('k').holder).toBe(taken);
  });

  it('shutdown withdraws and refuses every waiter and newcomer', async () => {
    const { backend, lines } = arriving({ shutdownGraceMs: 10 });
    const waiters = [lines.acquire('a', {}), lines.acquire('b', {})];
    const stopped = lines.stopTaking();
    for (const waiter of waiters) await expect(waiter).rejects.toBeInstanceOf(LockBackendError);
    await expect(lines.acquire('c', {})).rejects.toBeInstanceOf(LockBackendError);
    expect(backend.log).toEqual(['take wait', 'take wait', 'withdraw a', 'withdraw b']);
    await expect(stopped).resolves.toBe(true);
    expect(lines.activeKeys).toBe(0);
  });
});
