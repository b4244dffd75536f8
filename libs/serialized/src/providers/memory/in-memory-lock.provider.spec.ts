import { LockTimeoutError } from '../../errors';
import type { Lock } from '../../lock.interface';
import { InMemoryLockProvider } from './in-memory-lock.provider';

/** Where a waiter's promise stands, read without awaiting it. */
function track<T>(promise: Promise<T>): { state: 'pending' | 'granted' | 'failed'; value?: T; error?: unknown } {
  const seen: { state: 'pending' | 'granted' | 'failed'; value?: T; error?: unknown } = { state: 'pending' };
  promise.then(
    (value) => Object.assign(seen, { state: 'granted', value }),
    (error: unknown) => Object.assign(seen, { state: 'failed', error }),
  );
  return seen;
}

// Waiters' deadlines share one timer and wait in line by delay (DeadlineQueue.addInLine):
// these specs pin, on fake time, that each waiter still times out at its own deadline.
describe('InMemoryLockProvider waiting, on fake time', () => {
  let provider: InMemoryLockProvider;
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
    provider = new InMemoryLockProvider({ waitTimeoutMs: 100 });
  });
  afterEach(async () => {
    await provider.close();
    jest.useRealTimers();
  });

  it('times each waiter out waitTimeoutMs after it arrived, not after the one ahead; one handed the key never times out', async () => {
    const holder = await provider.acquire('k');
    const first = track(provider.acquire('k'));
    await jest.advanceTimersByTimeAsync(40);
    const second = track(provider.acquire('k'));
    await jest.advanceTimersByTimeAsync(40);
    await holder.release();
    await jest.advanceTimersByTimeAsync(0);
    expect(first.state).toBe('granted');
    await jest.advanceTimersByTimeAsync(59); // t = 139
    expect(second.state).toBe('pending');
    await jest.advanceTimersByTimeAsync(1); // t = 140: 100 ms after it arrived
    expect(second.state).toBe('failed');
    expect(second.error).toBeInstanceOf(LockTimeoutError);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(first.state).toBe('granted');
    await (first.value as Lock).release();
    expect([provider.activeKeys, provider.timerArmed, jest.getTimerCount()]).toEqual([0, false, 0]);
  });

  it('times out waiters of different waitTimeoutMs each at its own time', async () => {
    const holder = await provider.acquire('k');
    const slow = track(provider.acquire('k', { waitTimeoutMs: 300 }));
    const fast = track(provider.acquire('k', { waitTimeoutMs: 50 }));
    const usual = track(provider.acquire('k'));
    await jest.advanceTimersByTimeAsync(49);
    expect([slow.state, fast.state, usual.state]).toEqual(['pending', 'pending', 'pending']);
    await jest.advanceTimersByTimeAsync(1);
    expect([slow.state, fast.state, usual.state]).toEqual(['pending', 'failed', 'pending']);
    await jest.advanceTimersByTimeAsync(50);
    expect([slow.state, usual.state]).toEqual(['pending', 'failed']);
    await jest.advanceTimersByTimeAsync(199);
    expect(slow.state).toBe('pending');
    await jest.advanceTimersByTimeAsync(1);
    expect(slow.state).toBe('failed');
    expect(jest.getTimerCount()).toBe(0);
    await holder.release();
    expect(provider.activeKeys).toBe(0);
  });

  it('an aborted waiter leaves the line at once: the key goes to the one behind it, no deadline is left', async () => {
    const holder = await provider.acquire('k');
    const controller = new AbortController();
    const aborted = track(provider.acquire('k', { signal: controller.signal }));
    const behind = track(provider.acquire('k'));
    controller.abort(new Error('caller left'));
    await jest.advanceTimersByTimeAsync(0);
    expect(aborted.state).toBe('failed');
    expect((aborted.error as Error).message).toBe('caller left');
    await holder.release();
    await jest.advanceTimersByTimeAsync(0);
    expect(behind.state).toBe('granted');
    expect(provider.timerArmed).toBe(false);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(behind.state).toBe('granted');
    await (behind.value as Lock).release();
    expect(provider.activeKeys).toBe(0);
  });

  it('hands the next waiter a lock with a greater fencing token, in arrival order', async () => {
    const holder = await provider.acquire('k');
    const waiters = [0, 1, 2].map(() => provider.acquire('k'));
    const tokens = [holder.fencingToken];
    await holder.release();
    for (const waiter of waiters) {
      const lock = await waiter;
      tokens.push(lock.fencingToken);
      await lock.release();
    }
    expect(tokens.every((token, i) => i === 0 || token > tokens[i - 1])).toBe(true);
    expect(typeof tokens[0]).toBe('bigint');
  });
});
