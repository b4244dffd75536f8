import { LockBusyError, LockService, LockTimeoutError, MysqlLockProvider } from 'nestjs-serialized';
import { WorkerProcess } from '../support/processes';
import { TEST_MYSQL_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { MysqlInspector, uniquePrefix } from './support/mysql-inspect';

const WORKER = 'test/mysql/workers/lock-commands.worker.ts';

/**
 * What one instance sees and does while another OS process holds a key on the same
 * MariaDB: `inspect` tells the other process's holder (its connection, from
 * `IS_USED_LOCK`) and counts the sessions waiting in the server; a key set in reject
 * mode fails as a whole and leaves none of its keys taken, as the server and a third
 * process see it.
 */
describe('MysqlLockProvider beside a holder in another process', () => {
  const keyPrefix = uniquePrefix('other');
  let db: MysqlInspector;
  let provider: MysqlLockProvider;
  let locks: LockService;
  let holder: WorkerProcess;
  let other: WorkerProcess;

  beforeAll(async () => {
    const env = { MYSQL_URL: TEST_MYSQL_URL, KEY_PREFIX: keyPrefix };
    holder = WorkerProcess.start('mysql-holder', WORKER, env);
    other = WorkerProcess.start('mysql-other', WORKER, env);
    db = await MysqlInspector.connect();
    provider = new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix, lockPoolSize: 4 });
    locks = new LockService(provider);
    await Promise.all([holder.waitForType('ready', 120_000), other.waitForType('ready', 120_000)]);
  }, 150_000);
  afterAll(async () => {
    await Promise.all([holder.stop(), other.stop()]);
    await provider.close();
    await db.close();
  });

  /** `worker` holds `key`; resolves with the named lock's name. */
  const holdIn = async (worker: WorkerProcess, key: string): Promise<string> => {
    worker.send({ type: 'hold', key });
    const held = await worker.waitFor((m) => (m.type === 'held' && m.key === key) || m.type === 'failed', 20_000);
    expect(held.type).toBe('held');
    return held.name as string;
  };
  const releaseIn = async (worker: WorkerProcess, key: string): Promise<void> => {
    worker.send({ type: 'release', key });
    await worker.waitFor((m) => m.type === 'released' && m.key === key, 20_000);
  };

  it('inspect names the holder of another process by its connection, counts the waiters of two processes, and nothing once released', async () => {
    const key = uniqueId('cart');
    const name = await holdIn(holder, key);
    const holderSession = await db.holderOf(name);
    expect(holderSession).not.toBeNull();
    // One waiter in another process (its session waits in the server), two in this one.
    other.send({ type: 'take', key, waitTimeoutMs: 20_000 });
    await waitFor(async () => (await db.waitingFor(name)) === 1, 10_000, "the other process's session waiting in the server");
    const order: string[] = [];
    const runs = ['a', 'b'].map((id) => locks.run(key, () => void order.push(id), { waitTimeoutMs: 20_000 }));
    await waitFor(async () => (await locks.inspect(key)).waitingHere === 2, 10_000, 'two waiters here');

    expect(await locks.inspect(key)).toEqual({
      key,
      holders: [{ here: false, instance: `mysql#${holderSession}`, shared: false }],
      // Ours (2: one waits in the server on a session of its own, one in line) and the other process's session.
      waiting: 3,
      waitingHere: 2,
    });
    // Reading it took nothing and moved nobody.
    expect(await db.holderOf(name)).toBe(holderSession);
    expect(order).toEqual([]);

    await releaseIn(holder, key);
    // The server grants in request order: the other process's session first, then ours.
    await other.waitFor((m) => m.type === 'took' && m.key === key, 20_000);
    await Promise.all(runs);
    expect(order).toEqual(['a', 'b']);
    await waitFor(async () => (await locks.inspect(key)).holders.length === 0, 5000, 'nobody listed');
    expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
    expect(await db.holderOf(name)).toBeNull();
  }, 60_000);

  it('inspect lists a holder of this process with its token and connection, and one waiter of another process', async () => {
    const key = uniqueId('own');
    const lock = await provider.acquire(key);
    const name = provider.lockNameOf(key);
    const session = await db.holderOf(name);
    other.send({ type: 'take', key, waitTimeoutMs: 20_000 });
    await waitFor(async () => (await db.waitingFor(name)) === 1, 10_000, "the other process's session waiting in the server");

    expect(await locks.inspect(key)).toEqual({
      key,
      holders: [
        { here: true, fencingToken: lock.fencingToken, heldForMs: expect.any(Number), instance: `mysql#${session}`, shared: false },
      ],
      waiting: 1,
      waitingHere: 0,
    });
    await lock.release();
    const took = await other.waitFor((m) => m.type === 'took' && m.key === key, 20_000);
    expect(BigInt(took.token as string) > lock.fencingToken).toBe(true);
  }, 60_000);

  it('a key set in reject mode beside a key held elsewhere fails as a whole: no key of it stays taken, for the server and a third process', async () => {
    const [a, b, c] = ['1', '2', '3'].map((n) => `${uniqueId('set')}-${n}`);
    const names = [a, b, c].map((key) => provider.lockNameOf(key));
    await holdIn(holder, b);
    let ran = 0;

    // Canonical order a, b, c: `a` is taken, `b` is busy, `c` never asked for.
    const busy = await locks.run([c, b, a], () => void ran++, { mode: 'reject' }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(LockBusyError);
    expect(await Promise.all(names.map((n) => db.holderOf(n).then((id) => id !== null)))).toEqual([false, true, false]);
    other.send({ type: 'try', keys: [a, b, c] });
    expect((await other.waitForType('tried', 20_000)).free).toEqual([true, false, true]);

    // The same set in wait mode: one budget for the whole set, and again nothing left taken.
    const timedOut = await locks.run([c, b, a], () => void ran++, { waitTimeoutMs: 300 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(LockTimeoutError);
    expect(await Promise.all(names.map((n) => db.holderOf(n).then((id) => id !== null)))).toEqual([false, true, false]);
    expect(ran).toBe(0);

    // Once the other process lets `b` go, the set is taken whole, its locks in the order of the keys given.
    await releaseIn(holder, b);
    const taken = await locks.run(
      [c, b, a],
      async (set) => {
        ran++;
        expect(set.map((lock) => lock.key)).toEqual([c, b, a]);
        return Promise.all(names.map((n) => db.holderOf(n).then((id) => id !== null)));
      },
      { mode: 'reject' },
    );
    expect(taken).toEqual([true, true, true]);
    expect(ran).toBe(1);
    // run() settles before the releases' replies are in (test/contract/lock-provider.contract.ts).
    await waitFor(async () => (await db.held(names)) === 0, 5000, 'every key of the set let go');
  }, 60_000);
});
