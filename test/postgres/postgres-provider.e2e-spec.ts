import { Test } from '@nestjs/testing';
import {
  LockBackendError,
  LockLostError,
  LockProvider,
  LockService,
  LockTimeoutError,
  PostgresLockProvider,
  SerializedModule,
  type Lock,
  type PostgresLockProviderOptions,
} from 'nestjs-serialized';
import type { PostgresLock } from 'nestjs-serialized/providers/postgres/postgres.lock';
import { resolveSerializedOptions } from 'nestjs-serialized/config/serialized-options.resolver';
import { Pool } from 'pg';
import { TEST_DATABASE_URL } from '../support/services';
import { deferred, OverlapProbe, sleep, uniqueId, waitFor } from '../support/timing';
import { PgInspector, uniquePrefix } from './support/pg-inspect';
import { closedPort, startSilentServer, TcpProxy } from './support/tcp-proxy';
import { TransactionPooler } from './support/transaction-pooler';

/**
 * The PostgreSQL provider against a real server, in one process: two provider
 * instances stand for two app instances (each has its own lock pool, so its own
 * sessions, exactly as two processes would). Multi-process behaviour is in
 * postgres-multiprocess.e2e-spec.ts.
 */
describe('PostgresLockProvider (real PostgreSQL)', () => {
  const target = (() => {
    const url = new URL(TEST_DATABASE_URL);
    return { host: url.hostname || '127.0.0.1', port: Number(url.port) || 5432 };
  })();
  let pg: PgInspector;
  const open: PostgresLockProvider[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  const make = (options: PostgresLockProviderOptions = {}): PostgresLockProvider => {
    const provider = new PostgresLockProvider({ connectionString: TEST_DATABASE_URL, lockPoolSize: 5, ...options });
    open.push(provider);
    return provider;
  };
  /** Two instances sharing a namespace, told apart by application_name. */
  const pair = (options: PostgresLockProviderOptions = {}) => {
    const keyPrefix = options.keyPrefix ?? uniquePrefix('pair');
    return {
      a: make({ keyPrefix, applicationName: `${keyPrefix}:a`, ...options }),
      b: make({ keyPrefix, applicationName: `${keyPrefix}:b`, ...options }),
    };
  };

  beforeAll(async () => {
    pg = await PgInspector.connect();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((p) => p.close()));
    for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await pg.close();
  });

  describe('locks', () => {
    it.each([
      ['strict', { handoff: 'strict' as const }],
      ['cohort, at most 4 local hand-offs in a row', { handoff: 'cohort' as const, maxLocalHandOffs: 4 }],
    ])('excludes across instances, fencing tokens increase across them, and neither instance starves (%s)', async (mode, options) => {
      const { a, b } = pair(options);
      const key = uniqueId('shared');
      // Both instances line up in PostgreSQL behind a third holder before the race starts.
      const gate = await make({ keyPrefix: a.keyPrefix, applicationName: `${a.keyPrefix}:gate` }).acquire(key);
      const probe = new OverlapProbe();
      const turns: string[] = [];
      const tokens: bigint[] = [];
      const run = (provider: PostgresLockProvider, name: string) =>
        Promise.all(
          Array.from({ length: 20 }, () =>
            new LockService(provider).run(key, (lock) =>
              probe.run(async () => {
                tokens.push(lock.fencingToken);
                turns.push(name);
                await sleep(2);
              }),
            ),
          ),
        );
      const running = Promise.all([run(a, 'a'), run(b, 'b')]);
      await waitFor(
        async () => (await pg.advisoryLocks(a.applicationName, false)) === 1 && (await pg.advisoryLocks(b.applicationName, false)) === 1,
        10_000,
        'both instances wait in PostgreSQL',
      );
      await gate.release();
      await running;
      expect(probe.entered).toBe(40);
      expect(probe.maxInside).toBe(1);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
      // Each release to the server lets the other instance's waiting session in. Strict:
      // a release hands off locally only while the other instance has no session waiting
      // in the server (it may be between its try and its wait), so the turns alternate
      // nearly always. Cohort: runs of one server grant plus at most 4 local hand-offs.
      const firstHalf = turns.slice(0, 20);
      expect(firstHalf.filter((t) => t === 'a').length).toBeGreaterThanOrEqual(5);
      expect(firstHalf.filter((t) => t === 'b').length).toBeGreaterThanOrEqual(5);
      const switches = firstHalf.filter((t, i) => i > 0 && t !== firstHalf[i - 1]).length;
      const local = tokens.slice(0, 20).filter((token, i) => i > 0 && turns[i] === turns[i - 1] && token === tokens[i - 1] + 1n).length;
      if (mode === 'strict') {
        expect(switches).toBeGreaterThanOrEqual(8);
      } else {
        expect(local).toBeGreaterThan(0);
        let streak = 1;
        for (let i = 1; i < 20; i++) {
          streak = turns[i] === turns[i - 1] ? streak + 1 : 1;
          // Two server grants in a row at most (the other's next caller may not have queued yet).
          expect(streak).toBeLessThanOrEqual(10);
        }
      }
    });

    it('uses 64-bit keys in the namespace: the same key under another prefix is another lock', async () => {
      const one = make({ keyPrefix: uniquePrefix('ns1') });
      const two = make({ keyPrefix: uniquePrefix('ns2') });
      const held = await one.acquire('same-key');
      const other = await two.tryAcquire('same-key');
      expect(other).not.toBeNull();
      const [row] = await pg.query<{ objsubid: number }>(
        `SELECT l.objsubid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND a.application_name = $1`,
        [one.applicationName],
      );
      expect(row.objsubid).toBe(1); // 1 = one bigint key; 2 would be the (int4, int4) form
      await other!.release();
      await held.release();
    });

    it('holds the key on its own connection until release, and leaves no advisory lock behind', async () => {
      const provider = make({ keyPrefix: uniquePrefix('hold') });
      const keys = [uniqueId('k1'), uniqueId('k2'), uniqueId('k3')];
      const locks = await Promise.all(keys.map((k) => provider.acquire(k)));
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(3);
      expect(await pg.sessions(provider.applicationName)).toBe(3);
      await Promise.all(locks.map((l) => l.release()));
      expect(await pg.advisoryLocks(provider.applicationName)).toBe(0);
      expect(provider.activeKeys).toBe(0);
    });

    it('creates its fencing sequence when missing (mixed case, schema-qualified) and draws tokens from it', async () => {
      const name = `Nsz_Seq_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      cleanups.push(() => pg.query(`DROP SEQUENCE IF EXISTS public."${name}"`));
      const provider = make({ keyPrefix: uniquePrefix('seq'), fencingSequence: `public.${name}` });
      const first = await provider.acquire('k');
      await first.release();
      const second = await provider.acquire('k');
      await second.release();
      // A draw reserves a block of 1024 tokens: the session takes the next one while nobody else drew.
      expect([first.fencingToken, second.fencingToken]).toEqual([1n, 2n]);
      const [row] = await pg.query<{ last_value: string; increment_by: string }>(
        `SELECT last_value::text, increment_by::text FROM pg_sequences WHERE schemaname = 'public' AND sequencename = $1`,
        [name],
      );
      expect(row).toEqual({ last_value: '1', increment_by: '1024' });
    });

    it('uses a sequence of increment 1 as it is (no block to share): tokens come one per draw and keep increasing', async () => {
      const name = `nsz_one_seq_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      cleanups.push(() => pg.query(`DROP SEQUENCE IF EXISTS ${name}`));
      await pg.query(`CREATE SEQUENCE ${name}`);
      await pg.query(`SELECT nextval('${name}'), nextval('${name}')`);
      const provider = make({ keyPrefix: uniquePrefix('inc1'), fencingSequence: name });
      const first = await provider.acquire('k');
      await first.release();
      const second = await provider.acquire('k');
      await second.release();
      expect([first.fencingToken, second.fencingToken]).toEqual([3n, 4n]);
      const [row] = await pg.query<{ increment_by: string }>(`SELECT increment_by::text FROM pg_sequences WHERE sequencename = $1`, [name]);
      expect(row.increment_by).toBe('1');
    });

    it('reports an unlock that returned false as a loss (signal, lost) and closes that session; the release itself resolves', async () => {
      const provider = make({ keyPrefix: uniquePrefix('unlockfalse') });
      const lock = (await provider.acquire('k')) as PostgresLock;
      // Someone (here: the test, on the lock's own session) dropped the lock behind the provider's back.
      await lock.session.query({ text: 'SELECT pg_advisory_unlock_all()', rowMode: 'array' });
      // release() never rejects because the lock was lost: the loss it finds is told on the lock.
      await expect(lock.release()).resolves.toBeUndefined();
      expect(lock.lost).toBeInstanceOf(LockLostError);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      const next = await provider.acquire('k', { waitTimeoutMs: 2000 });
      await next.release();
    });
  });

  describe('waiting in the server', () => {
    it('bounds the server wait with lock_timeout: LockTimeoutError, no waiting lock left, connection reused', async () => {
      const { a, b } = pair();
      const key = uniqueId('timeout');
      const holder = await a.acquire(key);
      const waited = b.acquire(key, { waitTimeoutMs: 600 });
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 5000, 'b waits in PostgreSQL');
      const pidsBefore = await pg.pids(b.applicationName);
      await expect(waited).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await pg.advisoryLocks(b.applicationName)).toBe(0);
      // The server ended the wait, so the session came back to the pool intact.
      expect(await pg.pids(b.applicationName)).toEqual(pidsBefore);
      expect(b.connections).toBe(1);
      await holder.release();
      const next = await b.acquire(key, { waitTimeoutMs: 2000 });
      expect(await pg.pids(b.applicationName)).toEqual(pidsBefore);
      await next.release();
    });

    it('draws the fencing token when the lock is granted, not when the wait starts', async () => {
      const { a, b } = pair();
      const key = uniqueId('grant-order');
      const holder = await a.acquire(key);
      const waiting = b.acquire(key, { waitTimeoutMs: 10_000 });
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 5000, 'b waits in PostgreSQL');
      // A token drawn while b waits must be smaller than b's.
      const meanwhile = await a.acquire(uniqueId('other'));
      await meanwhile.release();
      await holder.release();
      const granted = await waiting;
      expect(granted.fencingToken > meanwhile.fencingToken).toBe(true);
      expect(meanwhile.fencingToken > holder.fencingToken).toBe(true);
      await granted.release();
    });

    it('never keeps an advisory lock when the token waits behind a locked sequence', async () => {
      const sequence = `nsz_busy_seq_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      await pg.query(`CREATE SEQUENCE ${sequence}`);
      cleanups.push(() => pg.query(`DROP SEQUENCE IF EXISTS ${sequence}`));
      const provider = make({ keyPrefix: uniquePrefix('seqlock'), fencingSequence: sequence });
      const warm = await provider.acquire('warm');
      await warm.release();
      // Another session alters the sequence in an open transaction: nextval must wait for it.
      const blocker = await PgInspector.connect();
      cleanups.push(() => blocker.close());
      await blocker.query('BEGIN');
      await blocker.query(`ALTER SEQUENCE ${sequence} INCREMENT BY 1`);
      const acquiring = provider.acquire('k', { waitTimeoutMs: 300 }).then(
        (lock) => lock,
        (error: unknown) => error,
      );
      await sleep(700);
      await blocker.query('COMMIT');
      const outcome = await acquiring;
      // The key was free: the lock_timeout meant for the key's wait does not cut the token's wait short,
      // which would have left the advisory lock on a pooled session.
      expect(outcome).not.toBeInstanceOf(Error);
      await (outcome as Lock).release();
      expect(await pg.advisoryLocks(provider.applicationName)).toBe(0);
    });

    it('lets at most one connection per key and process wait in PostgreSQL', async () => {
      const { a, b } = pair();
      const key = uniqueId('onewaiter');
      const holder = await a.acquire(key);
      const services = new LockService(b);
      const order: number[] = [];
      const waiters = Array.from({ length: 30 }, (_, i) => services.run(key, () => void order.push(i)));
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 5000, 'b waits in PostgreSQL');
      await sleep(100);
      expect(await pg.advisoryLocks(b.applicationName, false)).toBe(1);
      expect(await pg.sessions(b.applicationName)).toBe(1);
      expect(b.connections).toBe(1);
      await holder.release();
      await Promise.all(waiters);
      expect(order).toEqual(Array.from({ length: 30 }, (_, i) => i));
    });

    it('carries the remaining wait budget from the local queue into the server wait', async () => {
      const { a, b } = pair();
      const key = uniqueId('budget');
      const holder = await a.acquire(key);
      const head = new AbortController();
      const first = b.acquire(key, { waitTimeoutMs: 20_000, signal: head.signal }).catch((e) => e);
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 5000, 'b head waits in PostgreSQL');
      const startedAt = Date.now();
      const second = b.acquire(key, { waitTimeoutMs: 2000 }).then(
        () => 'acquired',
        (e) => e,
      );
      await sleep(1000);
      head.abort(new Error('head left'));
      // The second caller spent ~1 s in the local queue; it must not get a fresh 2 s in the server.
      const outcome = await second;
      const waited = Date.now() - startedAt;
      expect(outcome).toBeInstanceOf(LockTimeoutError);
      expect(waited).toBeGreaterThanOrEqual(1900);
      expect(waited).toBeLessThan(2900);
      await first;
      await holder.release();
    });

    it('cancels the server wait when the waiter aborts, leaving no lock held or awaited', async () => {
      const { a, b } = pair();
      const key = uniqueId('abort');
      const holder = await a.acquire(key);
      const controller = new AbortController();
      let ran = false;
      const waiting = new LockService(b).run(key, () => (ran = true), { signal: controller.signal });
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName, false)) === 1, 5000, 'b waits in PostgreSQL');
      const reason = new Error('client went away');
      const abortedAt = Date.now();
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      expect(Date.now() - abortedAt).toBeLessThan(500);
      // The wait is cancelled on the server (not left queued until lock_timeout).
      await waitFor(async () => (await pg.advisoryLocks(b.applicationName)) === 0, 3000, 'b no longer waits');
      await holder.release();
      const next = await a.tryAcquire(key);
      expect(next).not.toBeNull();
      await next!.release();
      expect(ran).toBe(false);
      expect(b.activeKeys).toBe(0);
    });

    it('ends nested locks taken in opposite orders with LockTimeoutError (each key has its own session)', async () => {
      const { a, b } = pair();
      const [k1, k2] = [uniqueId('dl1'), uniqueId('dl2')];
      const a1 = await a.acquire(k1);
      const b2 = await b.acquire(k2);
      const outcomes = await Promise.all([
        a.acquire(k2, { waitTimeoutMs: 400 }).catch((e) => e),
        b.acquire(k1, { waitTimeoutMs: 400 }).catch((e) => e),
      ]);
      expect(outcomes[0]).toBeInstanceOf(LockTimeoutError);
      expect(outcomes[1]).toBeInstanceOf(LockTimeoutError);
      await Promise.all([a1.release(), b2.release()]);
    });
  });

  describe('the lock pool', () => {
    it('lets held locks share sessions, and makes callers queue for a connection while every one waits in the server', async () => {
      const { a: provider, b: other } = pair({ lockPoolSize: 2 });
      // Held locks do not take a session each: three distinct keys held on two connections at most.
      const held = await Promise.all(['x', 'y', 'z'].map((key) => provider.acquire(key)));
      expect(await pg.sessions(provider.applicationName)).toBeLessThanOrEqual(2);
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(3);
      await Promise.all(held.map((lock) => lock.release()));
      // A wait in PostgreSQL's lock queue has a session to itself: two such waits fill the pool.
      const one = await other.acquire('one');
      const two = await other.acquire('two');
      const waitOne = provider.acquire('one', { waitTimeoutMs: 20_000 });
      const waitTwo = provider.acquire('two', { waitTimeoutMs: 20_000 });
      await waitFor(async () => (await pg.advisoryLocks(provider.applicationName, false)) === 2, 10_000, 'two server waits');
      let third: Lock | undefined;
      const waiting = provider.acquire('three', { waitTimeoutMs: 20_000 }).then((l) => (third = l));
      await sleep(200);
      expect(third).toBeUndefined();
      expect(await pg.sessions(provider.applicationName)).toBe(2);
      await one.release();
      const gotOne = await waitOne;
      await waiting;
      expect(third!.key).toBe('three');
      expect(await pg.sessions(provider.applicationName)).toBe(2);
      await two.release();
      const gotTwo = await waitTwo;
      await Promise.all([gotOne.release(), gotTwo.release(), third!.release()]);
      expect(await pg.advisoryLocks(provider.applicationName)).toBe(0);
    });

    it('builds its own lock pool from a pg.Pool the app passes, and never ends that pool', async () => {
      const appPool = new Pool({ connectionString: TEST_DATABASE_URL, max: 2, application_name: uniquePrefix('apppool') });
      cleanups.push(() => appPool.end());
      const provider = make({ pool: appPool, connectionString: undefined, keyPrefix: uniquePrefix('frompool') });
      const lock = await provider.acquire('k');
      expect(await pg.sessions(provider.applicationName)).toBe(1);
      expect(appPool.totalCount).toBe(0); // the app's work connections are never used for locks
      await lock.release();
      await provider.close();
      const { rows } = await appPool.query('SELECT 1 AS one');
      expect(rows[0].one).toBe(1);
      expect(appPool.ended).toBe(false);
      expect(await pg.sessions(provider.applicationName)).toBe(0);
    });
  });

  describe('lost sessions and unreachable servers', () => {
    it('aborts the signal with LockLostError when the session is terminated, and recovers', async () => {
      const provider = make({ keyPrefix: uniquePrefix('terminate') });
      const lock = await provider.acquire('k');
      const [pid] = await pg.pids(provider.applicationName);
      const lost = new Promise<unknown>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
      const terminatedAt = Date.now();
      expect(await pg.terminate(pid, provider.applicationName)).toBe(true);
      const reason = await lost;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(Date.now() - terminatedAt).toBeLessThan(2000);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
      await lock.release();
      const again = await provider.acquire('k', { waitTimeoutMs: 2000 });
      expect(await pg.pids(provider.applicationName)).not.toContain(pid);
      await again.release();
    });

    it('detects connections cut under it (server restart) and recovers when the server is back', async () => {
      const proxy = new TcpProxy(target);
      await proxy.start();
      cleanups.push(() => proxy.stop());
      const provider = make({ connectionString: proxy.url(TEST_DATABASE_URL), keyPrefix: uniquePrefix('cut'), connectTimeoutMs: 1000 });
      const lock = await provider.acquire('k');
      const idle = await provider.acquire('other');
      await idle.release(); // one idle pooled connection, which dies too
      const lost = new Promise<unknown>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
      await proxy.stop();
      expect(await lost).toBeInstanceOf(LockLostError);
      // Down: fail closed with LockBackendError, quickly, never a timeout.
      const startedAt = Date.now();
      await expect(provider.acquire('k2', { waitTimeoutMs: 10_000 })).rejects.toBeInstanceOf(LockBackendError);
      expect(Date.now() - startedAt).toBeLessThan(3000);
      await lock.release();
      await proxy.start();
      await sleep(1100); // past the fail-fast window after a failed connect
      const again = await provider.acquire('k', { waitTimeoutMs: 5000 });
      expect(again.signal.aborted).toBe(false);
      await again.release();
    });

    it('fails with LockBackendError when PostgreSQL refuses connections', async () => {
      const port = await closedPort();
      const provider = make({ connectionString: `postgres://postgres@127.0.0.1:${port}/test`, keyPrefix: uniquePrefix('refused') });
      await expect(provider.acquire('k')).rejects.toBeInstanceOf(LockBackendError);
      await expect(provider.tryAcquire('k')).rejects.toBeInstanceOf(LockBackendError);
      expect(provider.activeKeys).toBe(0);
    });

    it('fails with LockBackendError within connectTimeoutMs when PostgreSQL does not answer, even with a shorter wait', async () => {
      const silent = await startSilentServer();
      cleanups.push(() => silent.close());
      const provider = make({
        connectionString: `postgres://postgres@127.0.0.1:${silent.port}/test`,
        keyPrefix: uniquePrefix('unanswered'),
        connectTimeoutMs: 700,
      });
      const startedAt = Date.now();
      const outcomes = await Promise.all([
        provider.acquire('k', { waitTimeoutMs: 100 }).catch((e) => e),
        provider.acquire('k', { waitTimeoutMs: 10_000 }).catch((e) => e),
      ]);
      expect(outcomes[0]).toBeInstanceOf(LockBackendError);
      expect(outcomes[1]).toBeInstanceOf(LockBackendError);
      expect((outcomes[0] as Error).message).toMatch(/700 ms/);
      expect(Date.now() - startedAt).toBeLessThan(3000);
    });

    it('refuses a transaction-pooling proxy (PgBouncer pool_mode=transaction) with a clear message', async () => {
      const pooler = new TransactionPooler(target);
      await pooler.start();
      cleanups.push(() => pooler.stop());
      const provider = make({ connectionString: pooler.url(TEST_DATABASE_URL), keyPrefix: uniquePrefix('bouncer') });
      const error = await provider.acquire('k').catch((e) => e);
      expect(error).toBeInstanceOf(LockBackendError);
      expect(error.message).toMatch(/transaction or statement mode/);
      expect(error.message).toMatch(/PgBouncer/);
      // Refused for good, at once.
      await expect(provider.acquire('other')).rejects.toThrow(/PgBouncer/);
    });
  });

  describe('module and shutdown', () => {
    it('works through SerializedModule.forRoot({ driver: "postgres" }) and app.close() closes its sessions', async () => {
      const keyPrefix = uniquePrefix('module');
      const moduleRef = await Test.createTestingModule({
        imports: [SerializedModule.forRoot({ driver: 'postgres', postgres: { connectionString: TEST_DATABASE_URL }, keyPrefix })],
      }).compile();
      const app = moduleRef.createNestApplication();
      await app.init();
      const provider = app.get(LockProvider);
      expect(provider).toBeInstanceOf(PostgresLockProvider);
      const locks = app.get(LockService);
      let counter = 0;
      await Promise.all(
        Array.from({ length: 10 }, () =>
          locks.run('user-1', async () => {
            const read = counter;
            await sleep(1);
            counter = read + 1;
          }),
        ),
      );
      expect(counter).toBe(10);
      const name = (provider as PostgresLockProvider).applicationName;
      expect(await pg.sessions(name)).toBeGreaterThan(0);
      await app.close();
      expect(await pg.sessions(name)).toBe(0);
    });

    it('is configured from SERIALIZED_DRIVER=postgres and DATABASE_URL', async () => {
      const keyPrefix = uniquePrefix('env');
      const options = resolveSerializedOptions(
        {},
        { SERIALIZED_DRIVER: 'postgres', DATABASE_URL: TEST_DATABASE_URL, SERIALIZED_KEY_PREFIX: keyPrefix },
      );
      const provider = PostgresLockProvider.fromModuleOptions(options);
      open.push(provider);
      expect(provider.applicationName).toBe(`nestjs-serialized:${keyPrefix}`);
      const lock = await provider.acquire('k');
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(1);
      await lock.release();
    });

    it('never releases a lock whose holder outlives the grace period; it is released when the holder finishes', async () => {
      const provider = make({ keyPrefix: uniquePrefix('grace'), shutdownGraceMs: 200 });
      const gate = deferred();
      let entered = false;
      const holder = new LockService(provider).run('k', () => {
        entered = true;
        return gate.promise;
      });
      // The holder runs (the server showing the lock is not enough: its grant may still be on its way back).
      await waitFor(() => entered, 5000, 'the holder to run');
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(1);
      await provider.close();
      // Closed, but the handler still runs: its lock stays.
      expect(await pg.advisoryLocks(provider.applicationName, true)).toBe(1);
      gate.resolve();
      await holder;
      await waitFor(async () => (await pg.sessions(provider.applicationName)) === 0, 5000, 'session closed after release');
      // Timers stop on their next tick once nothing is held or running.
      await waitFor(() => !provider.timerArmed, 3000, 'no timer left');
    });
  });
});
