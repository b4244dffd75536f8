import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import type { AppStore, Resource } from '../../src/store/app.store';
import { InMemoryAppStore } from '../../src/store/in-memory-app.store';
import { PostgresAppStore } from '../../src/store/postgres-app.store';
import { RedisAppStore } from '../../src/store/redis-app.store';

describe.each([
  ['memory', () => new InMemoryAppStore()],
  ['redis', () => new RedisAppStore(TEST_REDIS_URL, uniqueId('fenced-store'))],
  ['postgres', () => new PostgresAppStore(TEST_DATABASE_URL)],
] as [string, () => AppStore][])('the example store’s fenced resource write (%s)', (_name, create) => {
  let store: AppStore;
  beforeAll(() => {
    store = create();
  });
  afterAll(async () => {
    await store.close();
  });

  const resource = (userId: string, name: string): Resource => ({ id: uniqueId(name), userId, name, createdAt: Date.now() });
  // Sorted: two rows written in one millisecond may list in either order.
  const names = async (userId: string) => (await store.listResources(userId)).map((r) => r.name).sort();

  it('writes while the fence is not behind the largest one written, and refuses (writing nothing) once it is', async () => {
    const user = uniqueId('u');
    expect(await store.addResource(resource(user, 'first'), 5n)).toBe(true);
    expect(await store.addResource(resource(user, 'paused-holder'), 3n)).toBe(false);
    expect(await store.addResource(resource(user, 'same-holder'), 5n)).toBe(true);
    expect(await store.addResource(resource(user, 'next-holder'), 7n)).toBe(true);
    expect(await store.addResource(resource(user, 'late'), 6n)).toBe(false);
    expect(await names(user)).toEqual(['first', 'next-holder', 'same-holder']);
  });

  it('compares tokens exactly beyond 2^53, and fences each user on its own', async () => {
    const [user, other] = [uniqueId('u'), uniqueId('o')];
    expect(await store.addResource(resource(user, 'big'), 9007199254740993n)).toBe(true);
    expect(await store.addResource(resource(user, 'just-below'), 9007199254740992n)).toBe(false);
    expect(await store.addResource(resource(other, 'small'), 1n)).toBe(true);
    expect(await names(user)).toEqual(['big']);
  });

  it('an unfenced write (the naive handler) is a plain write', async () => {
    const user = uniqueId('u');
    expect(await store.addResource(resource(user, 'a'))).toBe(true);
    expect(await store.addResource(resource(user, 'b'))).toBe(true);
    expect(await names(user)).toEqual(['a', 'b']);
  });
});
