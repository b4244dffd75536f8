import { DeadlineQueue } from './deadline-queue';
import { KeyedWaitQueue, type WaitOptions } from './keyed-wait-queue';

const options = (overrides: Partial<WaitOptions> = {}): WaitOptions => ({
  timeoutMs: 10_000,
  maxPending: 100,
  timeoutError: () => new Error('timeout'),
  busyError: () => new Error('busy'),
  ...overrides,
});

describe('KeyedWaitQueue', () => {
  let deadlines: DeadlineQueue;
  let queue: KeyedWaitQueue;
  beforeEach(() => {
    deadlines = new DeadlineQueue();
    queue = new KeyedWaitQueue(deadlines);
  });
  afterEach(() => deadlines.clear());

  it('takes a free key synchronously and hands it over in FIFO order', async () => {
    expect(queue.take('k', options())).toBeUndefined();
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) => queue.take('k', options())!.then(() => order.push(n)));
    expect(queue.waiting('k')).toBe(3);
    for (let i = 0; i < 3; i++) {
      queue.release('k');
      await Promise.resolve();
      await Promise.resolve();
    }
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3]);
    expect(queue.release('k')).toBe(false);
    expect(queue.size).toBe(0);
  });

  it('wait(): errors made from the key and the bound, a deadline per waiter, an abort listener only with a signal, none left after hand-off', async () => {
    const errors = {
      timeoutError: (key: string, ms: number) => new Error(`timeout ${key} ${ms}`),
      busyError: (key: string, max: number) => new Error(`busy ${key} ${max}`),
    };
    expect(queue.wait('k', 10_000, 1, undefined, errors)).toBeUndefined();
    const controller = new AbortController();
    const added = jest.spyOn(controller.signal, 'addEventListener');
    const removed = jest.spyOn(controller.signal, 'removeEventListener');
    const first = queue.wait('k', 10_000, 1, controller.signal, errors)!;
    await expect(queue.wait('k', 10_000, 1, undefined, errors)).rejects.toThrow('busy k 1');
    await expect(queue.wait('k', 0, 1, undefined, errors)).rejects.toThrow('timeout k 0');
    expect([added.mock.calls.length, deadlines.size]).toEqual([1, 1]);
    queue.release('k');
    await first;
    expect([removed.mock.calls.length, deadlines.size, deadlines.armed]).toEqual([1, 0, false]);
    controller.abort(new Error('late'));
    expect(queue.isHeld('k')).toBe(true);
    queue.release('k');
    expect(queue.size).toBe(0);
  });

  it('times out a waiter through its own deadline, aborts it through its own listener', async () => {
    const errors = { timeoutError: (key: string, ms: number) => new Error(`timeout ${key} ${ms}`), busyError: () => new Error('busy') };
    queue.wait('k', 10_000, 10, undefined, errors);
    const timedOut = queue.wait('k', 20, 10, undefined, errors)!;
    const controller = new AbortController();
    const aborted = queue.wait('k', 10_000, 10, controller.signal, errors)!;
    controller.abort(new Error('caller left'));
    await expect(aborted).rejects.toThrow('caller left');
    await expect(timedOut).rejects.toThrow('timeout k 20');
    expect([queue.waiting('k'), deadlines.size]).toEqual([0, 0]);
    queue.release('k');
    expect(queue.size).toBe(0);
  });

  it('never lets a newcomer barge in while the key passes to the head waiter', () => {
    queue.take('k', options());
    void queue.take('k', options());
    queue.release('k');
    expect(queue.tryTake('k')).toBe(false);
    expect(queue.isHeld('k')).toBe(true);
  });

  it('removes a timed-out waiter at once, keeping the others in order', async () => {
    jest.useFakeTimers();
    try {
      queue.take('k', options());
      const first = queue.take('k', options({ timeoutMs: 50, timeoutError: () => new Error('first timed out') }))!;
      const second = queue.take('k', options())!;
      jest.advanceTimersByTime(60);
      await expect(first).rejects.toThrow('first timed out');
      expect(queue.waiting('k')).toBe(1);
      queue.release('k');
      await expect(second).resolves.toBeUndefined();
      expect(deadlines.armed).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  it('removes an aborted waiter with the signal reason, and refuses a pre-aborted signal', async () => {
    queue.take('k', options());
    const controller = new AbortController();
    const waiting = queue.take('k', options({ signal: controller.signal }))!;
    const reason = new Error('left');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(queue.waiting('k')).toBe(0);
    await expect(queue.take('k', options({ signal: controller.signal }))).rejects.toBe(reason);
    await expect(queue.take('free', options({ signal: controller.signal }))).rejects.toBe(reason);
    expect(queue.isHeld('free')).toBe(false);
  });

  it('bounds waiters with maxPending and refuses to wait with timeout 0', async () => {
    queue.take('k', options());
    void queue.take('k', options({ maxPending: 1 }));
    await expect(queue.take('k', options({ maxPending: 1 }))).rejects.toThrow('busy');
    await expect(queue.take('k', options({ timeoutMs: 0 }))).rejects.toThrow('timeout');
  });

  it('refuses the waiters beyond their maxPending once callers wait ahead of them, keeping the oldest', async () => {
    queue.take('k', options());
    const outcomes = [2, 2, 3, 1].map((maxPending, i) =>
      queue.take('k', options({ maxPending, busyError: () => new Error(`busy ${i}`) }))!.then(
        () => `ran ${i}`,
        (error: Error) => error.message,
      ),
    );
    // One caller of this process waits ahead of them all (in the backend).
    queue.refuseSurplus('k', 1);
    expect(queue.waiting('k')).toBe(2);
    queue.release('k');
    queue.release('k');
    queue.release('k');
    // Waiter 0 has place 2 of 2, waiter 1 would be 3 of 2, waiter 2 is 3 of 3, waiter 3 would be 4 of 1.
    await expect(Promise.all(outcomes)).resolves.toEqual(['ran 0', 'busy 1', 'ran 2', 'busy 3']);
    expect(queue.size).toBe(0);
  });

  it('rejects every waiter on shutdown but leaves holders their keys', async () => {
    queue.take('a', options());
    const waiter = queue.take('a', options())!;
    queue.rejectAll((key) => new Error(`closing ${key}`));
    await expect(waiter).rejects.toThrow('closing a');
    expect(queue.isHeld('a')).toBe(true);
    queue.release('a');
    expect(queue.size).toBe(0);
  });
});
