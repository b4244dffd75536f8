import { Logger } from '@nestjs/common';
import { InMemoryLockProvider, LockService, PostgresLockProvider, RedisLockProvider, type LockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

type Closable = LockProvider & { close(): Promise<void> };

/** `leaseMs` per call, three times over two keys, through `LockService` (the decorator's path) and the provider. */
async function useLeases(provider: Closable): Promise<void> {
  const locks = new LockService(provider);
  const [a, b] = [uniqueId('lease-a'), uniqueId('lease-b')];
  await locks.run(a, () => undefined, { leaseMs: 5000 });
  await locks.run(b, () => undefined, { leaseMs: 7000 });
  const lock = await provider.acquire(a, { leaseMs: 9000 });
  await lock.release();
  const tried = await provider.tryAcquire(b, { leaseMs: 9000 });
  await tried?.release();
}

describe('leaseMs where it has no effect: one debug note per provider instance (docs/lease.md)', () => {
  let debug: jest.SpyInstance;
  const notes = () => debug.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('has no effect here'));
  beforeEach(() => {
    debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
  });
  afterEach(() => debug.mockRestore());

  const cases: [string, () => Closable, string | undefined][] = [
    ['in-memory', () => new InMemoryLockProvider(), 'InMemoryLockProvider: leaseMs=5000'],
    [
      'PostgreSQL',
      () => new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix: uniqueId('lease-note') }),
      'PostgresLockProvider: leaseMs=5000',
    ],
    [
      'Redis (a renewed lease: no note)',
      () => new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: uniqueId('lease-note') }),
      undefined,
    ],
  ];

  it.each(cases)('%s', async (_name, create, expected) => {
    const [one, two] = [create(), create()];
    try {
      // No leaseMs given: nothing to say.
      await new LockService(one).run(uniqueId('plain'), () => undefined);
      expect(notes()).toEqual([]);
      await useLeases(one);
      await useLeases(one);
      if (expected === undefined) {
        expect(notes()).toEqual([]);
        return;
      }
      expect(notes()).toHaveLength(1);
      expect(notes()[0]).toContain(expected);
      expect(notes()[0]).toContain('docs/lease.md');
      // Per instance, not per process: a second provider says it once too.
      await useLeases(two);
      expect(notes()).toHaveLength(2);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});
