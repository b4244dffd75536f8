import { LockLostError, MysqlLockProvider } from 'nestjs-serialized';
import { TcpProxy } from '../postgres/support/tcp-proxy';
import { TEST_MYSQL_URL } from '../support/services';
import { sleep } from '../support/timing';
import { MysqlInspector, uniquePrefix } from './support/mysql-inspect';

/**
 * A holder whose path to the server is cut, goes dark or slows down, through a
 * proxy the test controls (the shared server itself is never touched).
 */
describe('MysqlLockProvider when the path to the server fails', () => {
  let db: MysqlInspector;
  let proxy: TcpProxy;
  const providers: MysqlLockProvider[] = [];
  const make = (url: string, keyPrefix: string, options: { leaseMs?: number; sessionTimeoutMs?: number } = {}): MysqlLockProvider => {
    const made = new MysqlLockProvider({ url, keyPrefix, lockPoolSize: 2, ...options });
    providers.push(made);
    return made;
  };

  beforeAll(async () => {
    db = await MysqlInspector.connect();
  });
  beforeEach(async () => {
    const target = new URL(TEST_MYSQL_URL);
    proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 3306) });
    await proxy.start();
  });
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await proxy.stop();
  });
  afterAll(async () => {
    await db.close();
  });
  /** Until a session waits in the server for the named lock `name`. */
  const waitForWaiting = async (name: string): Promise<void> => {
    for (const until = Date.now() + 5000; (await db.waitingFor(name)) < 1;) {
      if (Date.now() > until) throw new Error(`nobody waits in the server for ${name}`);
      await sleep(20);
    }
  };

  it('a cut connection aborts the holder at once, and the key is free for the next holder at once', async () => {
    const keyPrefix = uniquePrefix('cut');
    const holder = make(proxy.url(TEST_MYSQL_URL), keyPrefix);
    const next = make(TEST_MYSQL_URL, keyPrefix);
    const lock = await holder.acquire('k');
    const waiting = next.acquire('k', { waitTimeoutMs: 10_000 });
    await sleep(100);
    const cutAt = Date.now();
    proxy.cutAll();
    const lost = await new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
    );
    expect(lost).toBeInstanceOf(LockLostError);
    expect(Date.now() - cutAt).toBeLessThan(500);
    const taken = await waiting;
    expect(Date.now() - cutAt).toBeLessThan(2000);
    expect(taken.fencingToken > lock.fencingToken).toBe(true);
    await lock.release(); // never rejects for a lost lock
    await taken.release();
    expect(await db.holderOf(holder.lockNameOf('k'))).toBeNull();
  }, 30_000);

  it('a waiter whose path is cut while it waits in the server waits again on a new session and gets the key when it is freed', async () => {
    const keyPrefix = uniquePrefix('cut-wait');
    const holder = make(TEST_MYSQL_URL, keyPrefix);
    const waiter = make(proxy.url(TEST_MYSQL_URL), keyPrefix);
    const lock = await holder.acquire('k');
    const settled = waiter.acquire('k', { waitTimeoutMs: 8000 }).then(
      (taken) => ({ taken, at: Date.now() }),
      (error: unknown) => ({ error, at: Date.now() }),
    );
    const name = holder.lockNameOf('k');
    await waitForWaiting(name);
    const [waitingSession] = await db.query<{ id: number }>(
      "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT GET_LOCK(%' AND INFO LIKE ?",
      [`%${name}%`],
    );
    proxy.cutAll();
    // Its old session ends; a new one of the waiter's takes its place in the server's queue.
    for (const until = Date.now() + 5000; await db.alive(Number(waitingSession.id));) {
      if (Date.now() > until) throw new Error('the cut session is still alive');
      await sleep(20);
    }
    await waitForWaiting(name);
    const releasedAt = Date.now();
    await lock.release();
    const outcome = await Promise.race([settled, sleep(8000).then(() => ({ hung: true, at: Date.now() }))]);
    expect(outcome).toEqual({ taken: expect.objectContaining({ key: 'k' }), at: expect.any(Number) });
    expect(outcome.at - releasedAt).toBeLessThan(1000);
    const { taken } = outcome as { taken: { fencingToken: bigint; release(): Promise<void> } };
    expect(taken.fencingToken > lock.fencingToken).toBe(true);
    await taken.release();
  }, 30_000);

  it('a waiter whose path goes dark while it waits in the server is answered within its budget, never left hanging', async () => {
    const keyPrefix = uniquePrefix('dark-wait');
    const holder = make(TEST_MYSQL_URL, keyPrefix);
    const waiter = make(proxy.url(TEST_MYSQL_URL), keyPrefix, { sessionTimeoutMs: 1000 });
    const lock = await holder.acquire('k');
    const settled = waiter.acquire('k', { waitTimeoutMs: 2500 }).then(
      (taken) => ({ taken, at: Date.now() }),
      (error: unknown) => ({ error, at: Date.now() }),
    );
    await waitForWaiting(holder.lockNameOf('k'));
    const darkAt = Date.now();
    proxy.blackhole();
    const outcome = await Promise.race([settled, sleep(10_000).then(() => ({ hung: true, at: Date.now() }))]);
    // Its budget ends the wait (the kill cannot reach the server's session: the session is ended instead).
    expect(outcome).toEqual({
      error: expect.objectContaining({ name: expect.stringMatching(/^Lock(Timeout|Backend)Error$/) }),
      at: expect.any(Number),
    });
    expect(outcome.at - darkAt).toBeLessThan(2500 + 1000 + 1500);
    await lock.release();
  }, 30_000);

  it('a path gone dark: the holder is told within a ping and sessionTimeoutMs; the server frees the key within about a lease', async () => {
    const keyPrefix = uniquePrefix('dark');
    const holder = make(proxy.url(TEST_MYSQL_URL), keyPrefix, { leaseMs: 3000, sessionTimeoutMs: 1000 });
    const next = make(TEST_MYSQL_URL, keyPrefix);
    const lock = await holder.acquire('k');
    const darkAt = Date.now();
    proxy.blackhole();
    const lost = await new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
    );
    const toldAfter = Date.now() - darkAt;
    expect(lost).toBeInstanceOf(LockLostError);
    expect((lost as Error).message).toMatch(/sessionTimeoutMs/);
    // ping interval (1 s) + sessionTimeoutMs (1 s) + the watchdog's tick.
    expect(toldAfter).toBeLessThan(3000);
    // The server never heard the close (the path is dark): it ends the session after its wait_timeout (5 s here).
    const taken = await next.acquire('k', { waitTimeoutMs: 15_000 });
    expect(Date.now() - darkAt).toBeLessThan(9000);
    expect(taken.fencingToken > lock.fencingToken).toBe(true);
    await taken.release();
  }, 30_000);

  it('a slow path is not a lost session: the lock stays held and is released normally', async () => {
    const keyPrefix = uniquePrefix('slow');
    const holder = make(proxy.url(TEST_MYSQL_URL), keyPrefix, { leaseMs: 600, sessionTimeoutMs: 1500 });
    const lock = await holder.acquire('k');
    proxy.delay(400); // 800 ms a round trip, under sessionTimeoutMs
    await sleep(3000); // several liveness pings, each slow
    expect(lock.lost).toBeUndefined();
    expect(lock.signal.aborted).toBe(false);
    await lock.extend();
    await lock.release();
    expect(lock.lost).toBeUndefined();
    proxy.delay(0);
    expect(await db.holderOf(holder.lockNameOf('k'))).toBeNull();
  }, 30_000);
});
