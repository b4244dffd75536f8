import { LockLostError, LockTimeoutError, type PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';
import { advisoryHolders, databaseTarget, ProviderSet } from './support/provider-set';
import { TcpProxy } from './support/tcp-proxy';

/**
 * A slow path is not a lost session (DESIGN, semantics 12). Instance A's lock
 * sessions go through a TCP proxy the test slows down; instance B connects
 * directly and keeps trying the key. PostgreSQL keeps A's session, and its
 * lock, however slow the path: A must not end the session itself.
 */
describe('PostgresLockProvider on a slow network path', () => {
  const providers = new ProviderSet();
  const cleanups: (() => Promise<unknown>)[] = [];
  let pg: PgInspector;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await providers.closeAll();
    for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await pg.close();
  });

  const startProxy = async (): Promise<TcpProxy> => {
    const proxy = new TcpProxy(databaseTarget());
    await proxy.start();
    cleanups.push(() => proxy.stop());
    return proxy;
  };

  /** B asks for the key over and over (each ask waits in PostgreSQL's queue for a moment). */
  const contend = (b: PostgresLockProvider, key: string) => {
    let entered = 0;
    let stopped = false;
    const running = (async () => {
      while (!stopped) {
        try {
          const lock = await b.acquire(key, { waitTimeoutMs: 250 });
          entered++;
          await lock.release();
        } catch (error) {
          if (!(error instanceof LockTimeoutError)) throw error;
        }
      }
    })();
    return {
      get entered() {
        return entered;
      },
      stop: () => {
        stopped = true;
        return running;
      },
    };
  };

  it('keeps its lock through a 1.5 s and then a 3 s delay on its session path: B never enters, the signal never aborts', async () => {
    const proxy = await startProxy();
    const keyPrefix = uniquePrefix('slow');
    const a = providers.make({ connectionString: proxy.url(TEST_DATABASE_URL), keyPrefix, applicationName: `${keyPrefix}:a` });
    const b = providers.make({ keyPrefix, applicationName: `${keyPrefix}:b` });
    const key = uniqueId('k');
    const lock = await a.acquire(key);
    const [holder] = await advisoryHolders(pg, a.applicationName);
    let aborted: string | undefined;
    let abortedAt = Infinity;
    lock.signal.addEventListener('abort', () => {
      aborted = String((lock.signal.reason as Error)?.message);
      abortedAt = Date.now();
    });
    const contender = contend(b, key);
    await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 10_000, 'B waits in PostgreSQL');

    const seen: Record<string, unknown>[] = [];
    for (const latencyMs of [1500, 3000]) {
      proxy.delay(latencyMs); // each way: a round trip takes 3 s, then 6 s
      const before = proxy.forwarded.toClient;
      // Two answers came back over the slow path (the session was checked through it),
      // or B got in, or A's lock was lost a while ago.
      await waitFor(
        () => proxy.forwarded.toClient >= before + 2 || contender.entered > 0 || Date.now() > abortedAt + 5000,
        40_000,
        'answers over the slow path',
      );
      seen.push({ latencyMs, bEntered: contender.entered, aborted, holders: await advisoryHolders(pg, a.applicationName) });
    }
    proxy.delay(0);
    await contender.stop();
    // Failed before: at 1500 ms the 1 s liveness ping ended A's own session, B entered and A's signal aborted.
    expect(seen).toEqual([
      { latencyMs: 1500, bEntered: 0, aborted: undefined, holders: [holder] },
      { latencyMs: 3000, bEntered: 0, aborted: undefined, holders: [holder] },
    ]);
    await lock.extend(); // the session answers on the fast path again
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
    // B was really trying: once A releases, it gets the key.
    const next = await b.acquire(key, { waitTimeoutMs: 5000 });
    await next.release();
  }, 90_000);

  it('ends a session whose path stays silent beyond sessionTimeoutMs: the signal aborts, then B gets the key', async () => {
    const proxy = await startProxy();
    const keyPrefix = uniquePrefix('silent');
    const a = providers.make({
      connectionString: proxy.url(TEST_DATABASE_URL),
      keyPrefix,
      applicationName: `${keyPrefix}:a`,
      sessionTimeoutMs: 1000,
    });
    const b = providers.make({ keyPrefix, applicationName: `${keyPrefix}:b` });
    const key = uniqueId('k');
    const lock = await a.acquire(key);
    const lost = new Promise<unknown>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
    const silentAt = Date.now();
    proxy.blackhole();
    const reason = await lost;
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as Error).message).toMatch(/sessionTimeoutMs/);
    // A dead path is found within a ping interval (1 s) plus sessionTimeoutMs, give or take a busy host.
    expect(Date.now() - silentAt).toBeLessThan(6000);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    await lock.release();
    // A closed its socket, so the server ended the session and freed the lock.
    const next = await b.acquire(key, { waitTimeoutMs: 10_000 });
    expect(next.fencingToken > lock.fencingToken).toBe(true);
    await next.release();
  }, 30_000);

  it('never takes its own stalled event loop for the server going silent', async () => {
    // The proxy runs in this process: while the loop is blocked it forwards nothing, so the
    // ping's answer arrives only after the stall, longer than sessionTimeoutMs after it was sent.
    const proxy = await startProxy();
    const keyPrefix = uniquePrefix('stall');
    const a = providers.make({
      connectionString: proxy.url(TEST_DATABASE_URL),
      keyPrefix,
      applicationName: `${keyPrefix}:a`,
      sessionTimeoutMs: 1500,
    });
    const key = uniqueId('k');
    const lock = await a.acquire(key);
    const [holder] = await advisoryHolders(pg, a.applicationName);
    proxy.delay(250);
    await waitFor(() => proxy.pending.toServer > 0, 10_000, 'a liveness ping on its way');
    const blockedUntil = Date.now() + 4000;
    while (Date.now() < blockedUntil) {
      // a synchronous burst: our own loop stalls for 4 s
    }
    const before = proxy.forwarded.toClient;
    await waitFor(() => lock.signal.aborted || proxy.forwarded.toClient >= before + 2, 20_000, 'answers after the stall');
    expect(lock.signal.aborted).toBe(false);
    expect(await advisoryHolders(pg, a.applicationName)).toEqual([holder]);
    proxy.delay(0);
    await lock.extend();
    await lock.release();
  }, 40_000);
});
