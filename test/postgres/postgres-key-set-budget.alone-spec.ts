import { Client, type QueryConfig } from 'pg';
import { LockBusyError, LockService, PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { uniquePrefix } from './support/pg-inspect';

/**
 * Performance budgets, not behaviour: how many statements (each one round trip) the
 * PostgreSQL driver sends to take a key set. Counted on every `pg.Client` of this
 * test process, between the call and the section. Run alone, after the rest, like
 * test/redis/redis-command-budget.alone-spec.ts.
 */
describe('PostgreSQL key-set statements (a budget suite, not a functional one)', () => {
  const open: PostgresLockProvider[] = [];
  const sent: string[] = [];
  const query = Client.prototype.query;
  beforeAll(() => {
    // Every statement a lock session sends goes through Client#query (one round trip each).
    Client.prototype.query = function (this: Client, config: unknown, ...rest: unknown[]) {
      sent.push(typeof config === 'string' ? config : ((config as QueryConfig).text ?? ''));
      return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
    } as typeof Client.prototype.query;
  });
  afterAll(() => {
    Client.prototype.query = query;
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((provider) => provider.close()));
  });
  let keyPrefix = '';
  beforeEach(() => {
    keyPrefix = uniquePrefix('set-budget');
  });
  /** Until `provider`'s releases are answered (`run` resolves before): the next call finds its session free. */
  const released = async (provider: PostgresLockProvider): Promise<void> => {
    while (provider.activeKeys > 0) await new Promise((resolve) => setImmediate(resolve));
  };
  /** A provider of this test's key prefix (two of them stand for two processes). */
  const make = (): PostgresLockProvider => {
    const provider = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix });
    open.push(provider);
    return provider;
  };
  it('an uncontended two-key set is taken with 1 statement (not 2), its locks with distinct, growing tokens', async () => {
    const provider = make();
    const locks = new LockService(provider);
    // A session opened and warmed first: what is counted is the set alone.
    await locks.run('warm-up', () => undefined);
    await released(provider);
    let before = 0n;
    for (let round = 0; round < 5; round++) {
      const from = sent.length;
      let taking = -1;
      const tokens = await locks.run([`to-${round}`, `from-${round}`], (held) => {
        taking = sent.length - from;
        return held.map((lock) => lock.fencingToken);
      });
      expect(taking).toBe(1);
      expect(tokens).toHaveLength(2);
      expect(tokens[0]).not.toBe(tokens[1]);
      for (const token of tokens) expect(token > before).toBe(true);
      before = tokens[0] > tokens[1] ? tokens[0] : tokens[1];
      await released(provider);
    }
  });

  it('the statements before the section: 1 for a set of 2, of 3 and of 16 keys', async () => {
    const provider = make();
    const locks = new LockService(provider);
    await locks.run('warm-up', () => undefined);
    await released(provider);
    for (const size of [2, 3, 16]) {
      const from = sent.length;
      let before = -1;
      await locks.run(
        Array.from({ length: size }, (_, i) => `k${size}-${i}`),
        () => void (before = sent.length - from),
      );
      expect({ size, statements: before }).toEqual({ size, statements: 1 });
      await released(provider);
    }
  });

  it('a key busy in another process: the one statement leaves nothing held, and the set goes key by key', async () => {
    const other = make();
    const provider = make();
    const locks = new LockService(provider);
    await locks.run('warm-up', () => undefined);
    await released(provider);
    const held = await other.acquire('b');
    const from = sent.length;
    await expect(locks.run(['a', 'b'], () => 'ran', { mode: 'reject' })).rejects.toBeInstanceOf(LockBusyError);
    // The set's statement, then the fallback: a try per key up to the busy one (and the release of the first).
    expect(sent.length - from).toBeGreaterThanOrEqual(2);
    // Nothing of the set is held: another provider finds `a` free at once.
    const a = await other.tryAcquire('a');
    expect(a).not.toBeNull();
    await a!.release();
    await held.release();
    await released(provider);
    // Both free now: one statement again.
    const again = sent.length;
    let before = -1;
    await locks.run(['a', 'b'], () => void (before = sent.length - again));
    expect(before).toBe(1);
  });
});
