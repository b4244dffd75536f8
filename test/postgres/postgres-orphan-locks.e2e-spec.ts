import { spawn, type ChildProcess } from 'node:child_process';
import { Logger } from '@nestjs/common';
import { LockBackendError, LockService, LockTimeoutError, type Lock, type PostgresLockProvider } from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
import { OverlapProbe, sleep, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';
import { databaseTarget, ProviderSet } from './support/provider-set';
import { TcpProxy } from './support/tcp-proxy';
import type { PostgresLock } from 'nestjs-serialized/providers/postgres/postgres.lock';

/**
 * An advisory lock nobody holds, and a grant on a session that has just
 * ended. Each case is the mechanism behind what a randomized fault run found,
 * reproduced on its own against the real server; the other holder is always
 * another provider instance (its own lock pool and sessions).
 */
describe('PostgresLockProvider: no advisory lock without an owner, no grant on a dead session', () => {
  const providers = new ProviderSet();
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  let pg: PgInspector;

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await providers.closeAll();
  });
  afterAll(async () => {
    await pg.close();
  });

  const cpuHog = (): ChildProcess => {
    const hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    cleanups.push(() => hog.kill('SIGKILL'));
    return hog;
  };

  /**
   * PostgreSQL may end a blocking `pg_advisory_lock` with "canceling statement due
   * to lock timeout" although it granted the lock in the same instant (the timeout's
   * interrupt stays pending after the grant), and a session-level lock outlives the
   * failed statement. A waiter whose budget ends just as the other instance lets go
   * must leave nothing on its session: otherwise the session, back in the pool,
   * holds the key for nobody, and every process waits for it until that session ends.
   */
  it('a wait that lock_timeout ends as the key is granted leaves no advisory lock on the waiter’s sessions', async () => {
    const { a, b } = providers.pair({ lockPoolSize: 2, handoff: 'strict' });
    cpuHog();
    cpuHog();
    let timedOut = 0;
    let granted = 0;
    const orphans: string[] = [];
    for (let i = 0; i < 400; i++) {
      const key = `k${i}`;
      const held = await b.acquire(key);
      const budget = 20 + (i % 10);
      const waiting = a.acquire(key, { waitTimeoutMs: budget }).then(
        (lock) => lock,
        (error: unknown) => {
          if (!(error instanceof LockTimeoutError)) throw error;
          return undefined;
        },
      );
      // Let go around the moment the waiter's budget ends, on both sides of it.
      await sleep(budget - 6 + (i % 9));
      await held.release();
      const lock = await waiting;
      if (lock) {
        granted++;
        await lock.release();
      } else {
        timedOut++;
      }
      // Whatever the outcome, A holds nothing now: its sessions must show no advisory lock.
      const left = await pg.advisoryLocks(a.applicationName, true);
      if (left > 0) orphans.push(`${key} (${lock ? 'granted' : 'timed out'})`);
      if (orphans.length > 0) break;
    }
    expect({ orphans }).toEqual({ orphans: [] });
    // Both outcomes happened, so the release fell on both sides of the deadline.
    expect(timedOut).toBeGreaterThan(0);
    expect(granted).toBeGreaterThan(0);
  }, 120_000);

  /**
   * The server grants a try, then the session is terminated before the client has
   * read the reply: the reply and the session's end arrive in one read. The server
   * freed the lock when the session ended and the other instance took it; the grant
   * must not make a holder (it would run beside the other one and never be told).
   */
  it('a grant whose session ended before its reply was read is no lock: the caller waits for the key again', async () => {
    const proxy = new TcpProxy(databaseTarget());
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const keyPrefix = uniquePrefix('dead-grant');
    const a = providers.make({
      keyPrefix,
      applicationName: `${keyPrefix}:a`,
      connectionString: proxy.url(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'),
      lockPoolSize: 2,
    });
    const b = providers.make({ keyPrefix, applicationName: `${keyPrefix}:b` });
    // A's session is open (a first lock taken and given back through the proxy).
    await (await a.acquire('warm-up')).release();
    const [pid] = await pg.pids(a.applicationName);

    proxy.holdToClients();
    let aLock: Lock | undefined;
    let aError: unknown;
    const asked = a.acquire('k', { waitTimeoutMs: 10_000 }).then(
      (lock) => (aLock = lock),
      (error: unknown) => (aError = error),
    );
    // The server granted A's try (its reply waits in the proxy), then ends the session.
    await waitFor(async () => (await pg.advisoryLocks(a.applicationName, true)) === 1, 5000, "A's grant on the server");
    expect(await pg.terminate(pid, a.applicationName)).toBe(true);
    await waitFor(async () => !(await pg.alive(pid)), 5000, "A's session to end");
    const bLock = await b.acquire('k', { waitTimeoutMs: 2000 });
    proxy.flushToClients();

    // A read the grant and the end together: it must not hold the key while B does.
    await sleep(500);
    expect({ aHoldsWhileBHolds: aLock !== undefined && !aLock.signal.aborted }).toEqual({ aHoldsWhileBHolds: false });
    const bToken = bLock.fencingToken;
    await bLock.release();
    await asked;
    if (aError !== undefined) {
      // No session left to retry on within the budget is a backend error, never a lock.
      expect(aError).toBeInstanceOf(LockBackendError);
    } else {
      // Retried on a fresh session and queued behind B: it holds the key after B, with a later token.
      expect(aLock!.signal.aborted).toBe(false);
      expect(aLock!.fencingToken).toBeGreaterThan(bToken);
      await aLock!.release();
    }
  }, 60_000);

  /**
   * The invariant behind both defects, checked against the server: every advisory
   * lock PostgreSQL shows for a session of the provider belongs to a holder, a
   * hand-off or an attempt of it. A lock that belongs to nobody (made here behind
   * the provider's back, as the timed-out wait used to leave one) is given back by
   * the audit at once and logged; the key is then free for the other instance.
   */
  it('the session audit releases an advisory lock nobody owns, logs it, and leaves owned locks alone', async () => {
    const { a, b } = providers.pair({ lockPoolSize: 1 });
    const logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    cleanups.push(() => Logger.overrideLogger(false));
    const owned = await a.acquire('owned');
    // The one session of A's pool now also holds `k` for nobody (as a lock granted under a timed-out wait did).
    const session = (owned as PostgresLock).session;
    const lockKey = await b.acquire('k').then(async (lock) => {
      const { lockKey: k } = lock as unknown as { lockKey: string };
      await lock.release();
      return k;
    });
    await session.query({ text: 'SELECT pg_advisory_lock($1::bigint)', values: [lockKey], rowMode: 'array' });
    expect(await b.tryAcquire('k')).toBeNull();

    expect(await a.auditLocks()).toBe(1);
    expect(logger.containing('for no holder, hand-off or attempt of this provider; it was released', 'error')).toHaveLength(1);
    // Freed for everyone; the lock A holds stays A's (B cannot take it), and a second audit finds nothing.
    const taken = await b.tryAcquire('k');
    expect(taken).not.toBeNull();
    await taken!.release();
    expect(await b.tryAcquire('owned')).toBeNull();
    expect(await a.auditLocks()).toBe(0);
    expect(owned.signal.aborted).toBe(false);
    await owned.release();
    expect(await pg.advisoryLocks(a.applicationName, true)).toBe(0);
  });

  /**
   * An audit that took an owned lock for an unowned one would release a lock its
   * holder still runs under. Three instances share six keys through both hand-off
   * modes, with timeouts, aborts and local hand-offs, while every instance audits
   * its sessions over and over: no audit may find anything, and no two sections of
   * a key may overlap.
   */
  it('audits running all the time under contention find nothing and release nothing owned', async () => {
    const keyPrefix = uniquePrefix('audit-load');
    const instances = ['a', 'b', 'c'].map((name) =>
      providers.make({ keyPrefix, applicationName: `${keyPrefix}:${name}`, lockPoolSize: 3 }),
    );
    const probes = new Map<string, OverlapProbe>();
    let stop = false;
    let sections = 0;
    let found = 0;
    let audits = 0;
    const loop = async (provider: PostgresLockProvider, seed: number) => {
      const locks = new LockService(provider);
      for (let i = seed; !stop; i++) {
        const key = `k${i % 6}`;
        const probe = probes.get(key) ?? probes.set(key, new OverlapProbe()).get(key)!;
        const aborter = new AbortController();
        if (i % 7 === 0) setTimeout(() => aborter.abort(new Error('gone')), 2);
        await locks
          .run(
            key,
            () =>
              probe.run(async () => {
                sections++;
                await sleep(i % 3);
              }),
            { waitTimeoutMs: 5 + (i % 40), handoff: i % 2 ? 'cohort' : 'strict', signal: aborter.signal },
          )
          .catch(() => undefined);
      }
    };
    const auditing = async (provider: PostgresLockProvider) => {
      while (!stop) {
        found += await provider.auditLocks();
        audits++;
        await sleep(1);
      }
    };
    const running = [
      ...instances.flatMap((provider, n) => Array.from({ length: 6 }, (_, j) => loop(provider, n * 100 + j * 13))),
      ...instances.map(auditing),
    ];
    // Five seconds, and then until enough has happened: on a busy host the same work takes longer.
    await sleep(5000);
    await waitFor(() => sections > 300 && audits > 150, 45_000, 'sections and audits enough to race each other').finally(() => {
      stop = true;
    });
    await Promise.all(running);
    expect({ found, maxInside: Math.max(...[...probes.values()].map((p) => p.maxInside)) }).toEqual({ found: 0, maxInside: 1 });
    // Every caller has its answer, but an aborted one's server side winds down after it
    // (its own session is ended, and the server process exits when it notices): what it
    // held goes within moments. A lock nobody owns on a pooled session stays (the
    // audits have stopped, and an idle session is kept for 10 s), so this still fails on one.
    const held = async () => Promise.all(instances.map((provider) => pg.advisoryLocks(provider.applicationName, true)));
    await waitFor(async () => (await held()).every((n) => n === 0), 3000, "the instances' advisory locks given back").catch(
      () => undefined,
    );
    expect(await held()).toEqual([0, 0, 0]);
  }, 90_000);
});
