import { LockService, PostgresLockProvider, type Lock } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId } from '../support/timing';

/**
 * `LockService.inspect` of a PostgreSQL key held together (`shared`, `concurrency`)
 * by another provider instance: each holder is listed as another session's, readers
 * marked shared and group members not (both hold the key in share mode: only their
 * shape marks tell them apart), and nothing once they let go.
 */
describe('LockService.inspect of a PostgreSQL key held together by another instance', () => {
  const keyPrefix = uniqueId('inspect-pg-holders');
  let other: PostgresLockProvider;
  let provider: PostgresLockProvider;
  let locks: LockService;

  beforeAll(() => {
    other = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix, applicationName: 'inspect-holders-other' });
    provider = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix });
    locks = new LockService(provider);
  });
  afterAll(async () => {
    await Promise.all([other.close(), provider.close()]);
  });

  it.each([
    ['readers (shared)', { shared: true }, true],
    ['a group (concurrency: 3)', { concurrency: 3 }, false],
    ['a group (concurrency: 32, whose first mark is a reader’s)', { concurrency: 32 }, false],
  ] as const)(
    'lists %s of another instance as such, and nothing once released',
    async (_name, shape, shared) => {
      const key = uniqueId('doc');
      const held: Lock[] = [await other.acquire(key, shape), await other.acquire(key, shape)];

      const info = await locks.inspect(key);
      expect(info).toEqual({
        key,
        holders: [
          { here: false, instance: expect.stringMatching(/^inspect-holders-other#\d+$/), shared },
          { here: false, instance: expect.stringMatching(/^inspect-holders-other#\d+$/), shared },
        ],
        waiting: 0,
        waitingHere: 0,
      });
      expect(new Set(info.holders.map((holder) => holder.instance)).size).toBe(2);

      await Promise.all(held.map((lock) => lock.release()));
      expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
    },
    30_000,
  );
});
