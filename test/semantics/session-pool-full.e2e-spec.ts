import { LockTimeoutError, MysqlLockProvider, PostgresLockProvider, type Lock, type LockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL, TEST_MYSQL_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

/**
 * A waiter needs a lock session of its own, and held locks keep their sessions: a
 * process whose every session holds a lock has none to wait on. Its waiter must
 * still notice that the key it waits for came free — otherwise the holders of the
 * pinned sessions (waiting for that waiter, through a key set or a nested call)
 * and the waiter wait for each other until the budget runs out. The key-set suite
 * (`key-sets-processes.e2e-spec.ts`) met this as a 20 s stall of all three
 * processes; here it is one process, one peer and a pool of two sessions.
 */
describe.each([['postgres'], ['mysql']])('a waiter on a full lock pool (%s driver)', (driver) => {
  const open: LockProvider[] = [];
  const make = (keyPrefix: string): PostgresLockProvider | MysqlLockProvider => {
    const provider =
      driver === 'postgres'
        ? new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, keyPrefix, lockPoolSize: 2, waitTimeoutMs: 8000 })
        : new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix, lockPoolSize: 2, waitTimeoutMs: 8000 });
    open.push(provider);
    return provider;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((provider) => provider.close()));
  });

  it('gets a key another provider instance lets go while every session of its pool holds a lock', async () => {
    const keyPrefix = uniqueId('pool-full');
    const here = make(keyPrefix);
    const peer = make(keyPrefix);
    const taken = await peer.acquire('wanted');

    // Two keys held on the two sessions of this pool (held locks of a fresh pool spread over its sessions).
    const held: Lock[] = [await here.acquire('a'), await here.acquire('b')];
    expect(here.connections).toBe(2);

    // The waiter finds "wanted" busy and needs a session of its own: there is none.
    const outcome = here.acquire('wanted').then(
      (lock) => ({ lock, error: undefined }),
      (error: unknown) => ({ lock: undefined, error }),
    );
    // It queues for a session (read off the pool: the provider has no public count of it), then the peer lets go.
    const pool = (here as unknown as { sessions: { pool: { waiting: number } } }).sessions.pool;
    await waitFor(() => pool.waiting > 0, 5000, 'the waiter to queue for a session');
    await taken.release();

    const { lock, error } = await outcome;
    // Before the fix: LockTimeoutError (reason 'no-connection', the pool full) after the whole 8 s budget, the key free all along.
    expect(error).toBeUndefined();
    expect(error).not.toBeInstanceOf(LockTimeoutError);
    expect(lock?.key).toBe('wanted');
    // The peer sees it held by this instance: nobody else can take it.
    expect(await peer.tryAcquire('wanted')).toBeNull();
    await lock!.release();
    await Promise.all(held.map((one) => one.release()));
  }, 30_000);
});
