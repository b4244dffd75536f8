import { LockBusyError } from '../errors';
import { KeyedWaitQueue } from './keyed-wait-queue';
import { PendingBudget } from './pending-budget';

const wait = { timeoutMs: 60_000, maxPending: 100, timeoutError: () => new Error('timeout'), busyError: () => new Error('busy') };

describe('PendingBudget', () => {
  it('counts waiters of every key of one queue, not holders, and gives places back however they leave', async () => {
    const budget = new PendingBudget(2);
    const queue = new KeyedWaitQueue(undefined, budget);
    expect(queue.take('a', wait)).toBeUndefined(); // holder: no place taken
    expect(queue.take('b', wait)).toBeUndefined();
    expect(budget.waiting).toBe(0);
    const aborted = new AbortController();
    const a1 = queue.take('a', { ...wait, signal: aborted.signal })!;
    const b1 = queue.take('b', wait)!;
    expect(budget.waiting).toBe(2);
    const refused = queue.take('a', wait)!;
    await expect(refused).rejects.toBeInstanceOf(LockBusyError);
    await expect(refused).rejects.toMatchObject({ reason: 'max-pending-total', maxPendingTotal: 2, key: 'a' });
    // A free key is taken at once, cap or not.
    expect(queue.take('c', wait)).toBeUndefined();
    aborted.abort(new Error('gone'));
    await expect(a1).rejects.toThrow('gone');
    expect(budget.waiting).toBe(1);
    queue.release('b');
    await b1;
    expect(budget.waiting).toBe(0);
    const later = queue.take('b', wait)!;
    queue.rejectAll(() => new Error('shutdown'));
    await expect(later).rejects.toThrow('shutdown');
    expect(budget.waiting).toBe(0);
  });

  it('is per instance: two queues never share places', () => {
    const one = new KeyedWaitQueue(undefined, new PendingBudget(1));
    const two = new KeyedWaitQueue(undefined, new PendingBudget(1));
    one.take('k', wait);
    two.take('k', wait);
    void one.take('k', wait)!.catch(() => undefined);
    void two.take('k', wait)!.catch(() => undefined);
    expect([one.waiting('k'), two.waiting('k')]).toEqual([1, 1]);
    one.rejectAll(() => new Error('x'));
    two.rejectAll(() => new Error('x'));
  });
});
