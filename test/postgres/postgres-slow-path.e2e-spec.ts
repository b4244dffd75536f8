import { LockLostError, LockTimeoutError, type PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';
import { advisoryHolders, databaseTarget, ProviderSet } from './support/provider-set';
import { TcpProxy } from './support/tcp-proxy';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
/**
 * A slow path is not a lost session (docs/semantics.md). Instance A's lock
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

const WORKER = 'test/postgres/workers/lock-commands.worker.ts';

/**
 * Across real processes: a slow path is not a lost session
 * (docs/semantics.md). Process A holds a key; its lock sessions go through a TCP
 * proxy in this test, which delays every byte 1.5 s and then 3 s each way. Process B
 * connects straight to PostgreSQL and keeps asking for the key. PostgreSQL keeps A's
 * session, and its lock, however slow the path, so A must not end it itself: B never
 * enters while A's section runs, A's signal never aborts, and pg_locks shows A's
 * original backend holding the lock throughout.
 */
describe('PostgreSQL across processes: a slow path is not a lost session', () => {
  const workers: WorkerProcess[] = [];
  let proxy: TcpProxy;
  let pg: PgInspector;

  const start = (name: string, env: Record<string, string>): WorkerProcess => {
    const worker = WorkerProcess.start(name, WORKER, env);
    workers.push(worker);
    return worker;
  };

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  beforeEach(async () => {
    proxy = new TcpProxy(databaseTarget());
    await proxy.start();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await proxy.stop();
  });
  afterAll(() => pg.close());

  it("keeps the holder's lock through a 1.5 s and then a 3 s delay on its session path: the other process never enters, the signal never aborts", async () => {
    const keyPrefix = uniquePrefix('slowmp');
    const key = uniqueId('k');
    const aApp = `${keyPrefix}:a`;
    const bApp = `${keyPrefix}:b`;
    const a = start('holder', { DATABASE_URL: proxy.url(TEST_DATABASE_URL), KEY_PREFIX: keyPrefix, APP_NAME: aApp, KEY: key });
    const b = start('contender', { DATABASE_URL: TEST_DATABASE_URL, KEY_PREFIX: keyPrefix, APP_NAME: bApp, KEY: key });
    await Promise.all([a.waitForType('ready', 60_000), b.waitForType('ready', 60_000)]);

    a.send({ type: 'hold' });
    const held = await a.waitForType('held');
    const [holder] = await advisoryHolders(pg, aApp);
    expect(holder).toEqual(expect.any(Number));
    b.send({ type: 'contend' });
    await waitFor(async () => (await pg.advisoryLocks(bApp, false)) === 1, 15_000, 'B waiting in PostgreSQL');

    const entered = (): WorkerMessage[] => b.messages.filter((m) => m.type === 'entered');
    const aborted = (): WorkerMessage | undefined => a.messages.find((m) => m.type === 'aborted');
    const tries = (): number => b.messages.filter((m) => m.type === 'tried').length;
    const seen: Record<string, unknown>[] = [];
    const slowSince = Date.now();
    /** When (ms after the path slowed down) each event happened. */
    const after = (m: WorkerMessage): number => (m.at as number) - slowSince;
    for (const latencyMs of [1500, 3000]) {
      proxy.delay(latencyMs); // each way: a round trip of A's takes 3 s, then 6 s
      const before = proxy.forwarded.toClient;
      const triesBefore = tries();
      // Two answers reached A over the slow path (its session was checked through it),
      // or B got in, or A's lock was lost a while ago.
      await waitFor(
        () =>
          proxy.forwarded.toClient >= before + 2 ||
          entered().length > 0 ||
          Date.now() > ((aborted()?.at as number | undefined) ?? Infinity) + 5000,
        40_000,
        'answers over the slow path',
      );
      seen.push({
        latencyMs,
        bEnteredAfterMs: entered().map(after),
        aborted: aborted() && `${aborted()!.message} (${after(aborted()!)} ms after the slowdown)`,
        holders: await advisoryHolders(pg, aApp),
        bKeptTrying: tries() > triesBefore,
      });
    }
    proxy.delay(0);
    b.send({ type: 'stop' });
    const stopped = await b.waitForType('stopped');
    // Failed before: at 1.5 s A's 1 s liveness ping ended A's own session, PostgreSQL
    // freed the lock, B entered while A's section still ran, and A's signal aborted.
    expect(seen).toEqual([
      { latencyMs: 1500, bEnteredAfterMs: [], aborted: undefined, holders: [holder], bKeptTrying: true },
      { latencyMs: 3000, bEnteredAfterMs: [], aborted: undefined, holders: [holder], bKeptTrying: true },
    ]);
    expect(stopped).toMatchObject({ entries: 0 });

    // The session answers on the fast path again: still A's, still the same backend.
    a.send({ type: 'extend' });
    expect(await a.waitFor((m) => m.type === 'extended' || m.type === 'failed')).toMatchObject({ type: 'extended', aborted: false });
    expect(await advisoryHolders(pg, aApp)).toEqual([holder]);
    a.send({ type: 'release' });
    await a.waitForType('released');
    // B was really trying: once A lets go, it gets the key, with a later fencing token.
    b.send({ type: 'take', waitTimeoutMs: 10_000 });
    const took = await b.waitFor((m) => m.type === 'took' || m.type === 'failed', 20_000);
    expect(took).toMatchObject({ type: 'took' });
    expect(BigInt(took.token as string) > BigInt(held.token as string)).toBe(true);
    expect(a.messages.filter((m) => m.type === 'aborted' || m.type === 'failed')).toEqual([]);
  }, 120_000);
});
