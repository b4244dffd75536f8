import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { advisoryHolders, databaseTarget } from '../postgres/support/provider-set';
import { TcpProxy } from '../postgres/support/tcp-proxy';
import { WorkerProcess, type WorkerMessage } from '../support/processes';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

const WORKER = 'test/semantics/workers/pg-lock.worker.ts';

/**
 * Issue 10, item 2, across real processes: a slow path is not a lost session
 * (DESIGN, semantics 12). Process A holds a key; its lock sessions go through a TCP
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
