import { LockBusyError } from '../errors';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { PendingBudget } from './pending.budget';

describe('PendingBudget', () => {
  it('counts waiters of every key of one provider, not holders, and gives places back however they leave', async () => {
    const provider = new InMemoryLockProvider({ maxPendingTotal: 2, waitTimeoutMs: 60_000 });
    const a = await provider.acquire('a'); // holder: no place taken
    const b = await provider.acquire('b');
    const aborted = new AbortController();
    const a1 = provider.acquire('a', { signal: aborted.signal });
    const b1 = provider.acquire('b');
    const refused = provider.acquire('a');
    await expect(refused).rejects.toBeInstanceOf(LockBusyError);
    await expect(refused).rejects.toMatchObject({ reason: 'max-pending-total', maxPendingTotal: 2, key: 'a' });
    // A free key is taken at once, cap or not.
    const c = await provider.acquire('c');
    aborted.abort(new Error('gone'));
    await expect(a1).rejects.toThrow('gone');
    // The aborted caller's place is free again: one more may wait.
    const a2 = provider.acquire('a');
    await b.release();
    await (await b1).release();
    // Both places are free once b1 holds: two may wait again.
    const c1 = provider.acquire('c');
    const closing = provider.close();
    await expect(a2).rejects.toMatchObject({ name: 'LockBackendError' });
    await expect(c1).rejects.toMatchObject({ name: 'LockBackendError' });
    await Promise.all([a.release(), c.release()]);
    await closing;
  });

  it('is per instance: two providers never share places', async () => {
    const [one, two] = [new InMemoryLockProvider({ maxPendingTotal: 1 }), new InMemoryLockProvider({ maxPendingTotal: 1 })];
    const held = await Promise.all([one.acquire('k'), two.acquire('k')]);
    const waiting = [one.acquire('k'), two.acquire('k')];
    await Promise.all(held.map((lock) => lock.release()));
    await Promise.all((await Promise.all(waiting)).map((lock) => lock.release()));
    await Promise.all([one.close(), two.close()]);
  });

  it('refuses past its limit and never counts below zero', () => {
    const budget = new PendingBudget(1);
    expect([budget.take(), budget.take()]).toEqual([true, false]);
    budget.give();
    budget.give();
    expect(budget.waiting).toBe(0);
  });
});
