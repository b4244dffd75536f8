import type { StoredResponse } from '../stored-response.codec';
import { MemoryIdempotencyStore } from './memory-idempotency.store';

const record: StoredResponse = { fingerprint: 'f', kind: 'values', values: [1], storedAt: 0 };

describe('MemoryIdempotencyStore', () => {
  it('forgets a record at its TTL, and holds no timer once empty', async () => {
    const store = new MemoryIdempotencyStore();
    await store.set('a', record, 50);
    expect(await store.get('a')).toEqual(record);
    expect(store.timerArmed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await store.get('a')).toBeUndefined();
    expect([store.size, store.timerArmed]).toEqual([0, false]);
  });

  it('replaces a record, and two stores share nothing', async () => {
    const one = new MemoryIdempotencyStore();
    const two = new MemoryIdempotencyStore();
    await one.set('a', record, 10_000);
    await one.set('a', { ...record, values: [2] }, 10_000);
    expect((await one.get('a'))?.values).toEqual([2]);
    expect(await two.get('a')).toBeUndefined();
    await one.close();
    expect([one.size, one.timerArmed]).toEqual([0, false]);
  });
});
