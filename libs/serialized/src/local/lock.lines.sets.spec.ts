import { LockTimeoutError } from '../errors';
import type { LineCaller } from './line.caller';
import type { LockBackend } from './lock-backend.interface';
import { LockLines } from './lock.lines';

/** A lock of the fake backend below: released through the lines, once. */
class SetLock {
  private done = false;
  constructor(
    readonly key: string,
    private readonly lines: () => LockLines<SetLock>,
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

/** A backend asked on its turn that can take a set at once; every ask is answered by the test, and logged. */
class SetBackend implements LockBackend<SetLock> {
  readonly log: string[] = [];
  readonly asks: { callers: readonly LineCaller<SetLock>[]; answer: ReturnType<typeof deferred<SetLock[] | null>> }[] = [];
  readonly takes: { caller: LineCaller<SetLock>; answer: ReturnType<typeof deferred<SetLock | null>> }[] = [];
  lines!: LockLines<SetLock>;

  take(caller: LineCaller<SetLock>): Promise<SetLock | null> {
    this.log.push(`take ${caller.key}`);
    const answer = deferred<SetLock | null>();
    this.takes.push({ caller, answer });
    return answer.promise;
  }
  /** Asked on arrival (a waiter): answered through its caller when the test grants it. */
  askOnArrival(caller: LineCaller<SetLock>): void {
    void this.take(caller).then(
      (lock) => caller.granted(lock!),
      (error: unknown) => caller.refused(error),
    );
  }
  takeSet(callers: readonly LineCaller<SetLock>[]): Promise<SetLock[] | null> {
    this.log.push(`take set ${callers.map((caller) => `${caller.key}:${caller.mode}`).join(' ')}`);
    const answer = deferred<SetLock[] | null>();
    this.asks.push({ callers, answer });
    return answer.promise;
  }
  /** Grants the oldest set ask. */
  grantSet(): SetLock[] {
    const { callers, answer } = this.asks.shift()!;
    const locks = callers.map((caller) => new SetLock(caller.key, () => this.lines));
    answer.resolve(locks);
    return locks;
  }
  /** Grants the oldest one-key ask. */
  grant(): SetLock {
    const { caller, answer } = this.takes.shift()!;
    const lock = new SetLock(caller.key, () => this.lines);
    answer.resolve(lock);
    return lock;
  }
  release(lock: SetLock): undefined {
    this.log.push(`release ${lock.key}`);
    return undefined;
  }
  timeoutError(key: string, waitTimeoutMs: number): Error {
    return new LockTimeoutError(key, waitTimeoutMs);
  }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('LockLines.takeSet (a key set at once, LockBackend.takeSet)', () => {
  let backend: SetBackend;
  let lines: LockLines<SetLock>;
  beforeEach(() => {
    backend = new SetBackend();
    lines = backend.lines = new LockLines<SetLock>(backend, { waitTimeoutMs: 10_000 });
  });
  afterEach(() => lines.clearTimers());

  it('asks the backend once for every key, each a try; a caller arriving meanwhile waits behind the set, then asks', async () => {
    const set = lines.takeSet(['a', 'b'], {})!;
    expect(backend.log).toEqual(['take set a:try b:try']);
    const later = lines.acquire('b', {});
    // In line behind the set's try, which counts as asking.
    expect([lines.waiting('b'), lines.inspectHere('b').waiting]).toEqual([1, 2]);
    const [a, b] = backend.grantSet();
    await expect(set).resolves.toEqual([a, b]);
    expect(lines.inspectHere('a').holder).toBe(a);
    expect(lines.inspectHere('b')).toEqual({ holder: b, waiting: 1 });
    await tick();
    expect(backend.log).toEqual(['take set a:try b:try']);
    await b.release();
    expect(backend.log).toEqual(['take set a:try b:try', 'release b', 'take b']);
    const next = backend.grant();
    await expect(later).resolves.toBe(next);
    await next.release();
    await a.release();
    expect(lines.activeKeys).toBe(0);
  });

  it('is not asked when any key is held, asked for or waited for in this process: the caller goes key by key', async () => {
    const asking = lines.acquire('b', {});
    expect(lines.takeSet(['a', 'b'], {})).toBeUndefined();
    const held = backend.grant();
    await asking;
    expect(lines.takeSet(['a', 'b'], {})).toBeUndefined();
    expect(backend.log).toEqual(['take b']);
    await held.release();
    expect(lines.activeKeys).toBe(0);
  });

  it('a busy key (null): nothing held here, and the callers that came meanwhile ask in turn', async () => {
    const set = lines.takeSet(['a', 'b'], {})!;
    const later = lines.acquire('a', {});
    backend.asks.shift()!.answer.resolve(null);
    await expect(set).resolves.toBeNull();
    await tick();
    expect(backend.log).toEqual(['take set a:try b:try', 'take a']);
    expect(lines.inspectHere('b').holder).toBeUndefined();
    const lock = backend.grant();
    await expect(later).resolves.toBe(lock);
    await lock.release();
    expect(lines.activeKeys).toBe(0);
  });

  it("a backend error rejects the set with it, and leaves every key's line as a refused try does", async () => {
    const set = lines.takeSet(['a', 'b'], {})!;
    const failure = new Error('down');
    backend.asks.shift()!.answer.reject(failure);
    await expect(set).rejects.toBe(failure);
    expect(lines.activeKeys).toBe(0);
  });

  it('a backend without takeSet, or shutdown, or an aborted signal: not asked', async () => {
    const plain = new LockLines<SetLock>({
      take: () => Promise.resolve(null),
      release: () => undefined,
      timeoutError: (key) => new Error(key),
    });
    expect(plain.takeSet(['a', 'b'], {})).toBeUndefined();
    const aborted = new AbortController();
    aborted.abort();
    expect(lines.takeSet(['a', 'b'], { signal: aborted.signal })).toBeUndefined();
    await lines.stopTaking();
    expect(lines.takeSet(['a', 'b'], {})).toBeUndefined();
    expect(backend.log).toEqual([]);
  });

  it('a backend asked on arrival: no line before the answer, a caller arriving meanwhile asks at once; the grant records each holder', async () => {
    const arrival = new SetBackend();
    const onArrival = (arrival.lines = new LockLines<SetLock>(Object.assign(arrival, { asksOn: 'arrival' as const }), {
      waitTimeoutMs: 10_000,
    }));
    const set = onArrival.takeSet(['a', 'b'], {})!;
    expect(onArrival.activeKeys).toBe(0);
    const later = onArrival.acquire('b', {});
    expect(arrival.log).toEqual(['take set a:try b:try', 'take b']);
    const [a, b] = arrival.grantSet();
    await expect(set).resolves.toEqual([a, b]);
    expect([onArrival.inspectHere('a').holder, onArrival.inspectHere('b').holder]).toEqual([a, b]);
    await a.release();
    await b.release();
    const next = arrival.grant();
    await expect(later).resolves.toBe(next);
    await next.release();
    const busy = onArrival.takeSet(['a', 'b'], {})!;
    arrival.asks.shift()!.answer.resolve(null);
    await expect(busy).resolves.toBeNull();
    expect(onArrival.activeKeys).toBe(0);
    onArrival.clearTimers();
  });
});
