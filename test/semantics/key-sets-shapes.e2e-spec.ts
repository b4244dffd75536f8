import {
  InMemoryLockProvider,
  LockService,
  PostgresLockProvider,
  RedisLockProvider,
  type Lock,
  type LockProvider,
} from 'nestjs-serialized';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { deferred, sleep, waitFor } from '../support/timing';
import { uniquePrefix } from '../postgres/support/pg-inspect';

/**
 * `shared` and `concurrency` on a key set apply to each key of the set
 * (docs/semantics.md, "Several keys at once"): a shared set holds each key beside
 * other readers and excludes a writer of any of its keys; `concurrency: 2` admits
 * two sets over the same keys at once, not three. On PostgreSQL and Redis two
 * provider instances of one key prefix stand for two processes (each has its own
 * sessions or connections).
 */
describe.each([['memory'], ['postgres'], ['redis']])('key sets with shared and concurrency (%s driver)', (driver) => {
  const open: LockProvider[] = [];
  let keyPrefix = '';
  beforeEach(() => {
    keyPrefix = uniquePrefix('set-shapes');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((provider) => provider.close?.()));
  });
  /** A provider: on PostgreSQL and Redis a new instance (another process); in memory, the one of this test. */
  const provider = (): LockProvider => {
    if (driver === 'memory' && open.length > 0) return open[0];
    const made =
      driver === 'memory'
        ? new InMemoryLockProvider()
        : driver === 'redis'
          ? new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix })
          : new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix });
    open.push(made);
    return made;
  };
  const service = (): LockService => new LockService(provider());

  it('a shared set holds each key beside other readers: a reader of one key and a shared set over another pair get in while it holds', async () => {
    const first = service();
    const second = service();
    const inside = deferred();
    const leave = deferred();
    const holding = first.run(
      ['a', 'b'],
      async (locks) => {
        inside.resolve();
        await leave.promise;
        return locks.map((lock) => lock.key);
      },
      { shared: true },
    );
    await inside.promise;
    // Readers beside it, while it holds both keys.
    await expect(second.run('a', (lock) => lock.key, { shared: true, mode: 'reject' })).resolves.toBe('a');
    await expect(second.run(['b', 'c'], (locks) => locks.length, { shared: true, waitTimeoutMs: 10_000 })).resolves.toBe(2);
    await expect(first.run(['b', 'a'], (locks) => locks.length, { shared: true, reentrant: false, mode: 'reject' })).resolves.toBe(2);
    leave.resolve();
    await expect(holding).resolves.toEqual(['a', 'b']);
  });

  it('a shared set excludes a writer of any of its keys; a writer set waits for it, and readers wait for a writer set', async () => {
    const readers = service();
    const writers = service();
    const inside = deferred();
    const leave = deferred();
    const events: string[] = [];
    const reading = readers.run(
      ['a', 'b'],
      async () => {
        events.push('readers in');
        inside.resolve();
        await leave.promise;
        events.push('readers out');
      },
      { shared: true },
    );
    await inside.promise;
    // A writer of either key is refused at once, and a writer's try is null.
    for (const key of ['a', 'b']) {
      await expect(writers.run(key, () => 'wrote', { mode: 'reject' })).rejects.toMatchObject({ name: 'LockBusyError' });
    }
    await expect(writers.run(['b', 'z'], () => 'wrote', { mode: 'reject' })).rejects.toMatchObject({ name: 'LockBusyError' });
    // A writer set over one of its keys waits, and gets in after the readers leave.
    const writing = writers.run(['z', 'b'], () => void events.push('writer in'), { waitTimeoutMs: 20_000 });
    await sleep(150);
    expect(events).toEqual(['readers in']);
    leave.resolve();
    await Promise.all([reading, writing]);
    expect(events).toEqual(['readers in', 'readers out', 'writer in']);

    // The other way round: a writer set holds, a shared set over one of its keys waits for it.
    const writerIn = deferred();
    const writerLeaves = deferred();
    const order: string[] = [];
    const held = writers.run(['a', 'b'], async () => {
      order.push('writer in');
      writerIn.resolve();
      await writerLeaves.promise;
      order.push('writer out');
    });
    await writerIn.promise;
    await expect(readers.run(['b', 'c'], () => 'read', { shared: true, mode: 'reject' })).rejects.toMatchObject({ name: 'LockBusyError' });
    const read = readers.run(['b', 'c'], () => void order.push('readers in'), { shared: true, waitTimeoutMs: 20_000 });
    await sleep(150);
    expect(order).toEqual(['writer in']);
    writerLeaves.resolve();
    await Promise.all([held, read]);
    expect(order).toEqual(['writer in', 'writer out', 'readers in']);
  });

  it('concurrency: 2 admits two sets over the same keys at once, not three; the third gets in when one leaves', async () => {
    const services = [service(), service(), service()];
    let inside = 0;
    let peak = 0;
    const leave = [deferred(), deferred(), deferred()];
    const entered: number[] = [];
    const tokens: bigint[][] = [];
    const runs = services.map((locks, i) =>
      locks.run(
        i === 1 ? ['y', 'x'] : ['x', 'y'],
        async (held: readonly Lock[]) => {
          inside++;
          peak = Math.max(peak, inside);
          entered.push(i);
          tokens.push(held.map((lock) => lock.fencingToken));
          await leave[i].promise;
          inside--;
        },
        { concurrency: 2, waitTimeoutMs: 20_000 },
      ),
    );
    await waitFor(() => entered.length === 2, 20_000, 'two sets inside');
    await sleep(150);
    expect({ inside, peak, entered: entered.length }).toEqual({ inside: 2, peak: 2, entered: 2 });
    // A try of a third one is refused while two hold.
    await expect(services[0].run(['x', 'y'], () => 'in', { concurrency: 2, mode: 'reject', reentrant: false })).rejects.toMatchObject({
      name: 'LockBusyError',
    });
    const first = entered[0];
    leave[first].resolve();
    await waitFor(() => entered.length === 3, 20_000, 'the third set inside');
    expect(peak).toBe(2);
    for (const i of [0, 1, 2]) leave[i].resolve();
    await Promise.all(runs);
    expect(inside).toBe(0);
    // Each grant has a token of its own per key.
    expect(new Set(tokens.flat()).size).toBe(6);
  });
});
