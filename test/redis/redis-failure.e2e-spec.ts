import { Redis } from 'ioredis';
import { LockBackendError, LockLostError, LockService, LockTimeoutError, RedisLockProvider, type Lock } from 'nestjs-serialized';
import { sleep, uniqueId, waitFor } from '../support/timing';
import { ThrowawayRedis } from './support/throwaway-redis';

/**
 * Redis going away and coming back, on a private redis-server of the test's own
 * (the shared one is never stopped): fail closed with LockBackendError within the
 * connect timeout, lose held locks visibly, recover without a restart.
 */
const CONNECT_TIMEOUT_MS = 500;

describe('RedisLockProvider when Redis fails', () => {
  const providers: RedisLockProvider[] = [];
  const servers: ThrowawayRedis[] = [];
  const make = (url: string | undefined, options: Partial<ConstructorParameters<typeof RedisLockProvider>[0]> = {}): RedisLockProvider => {
    const provider = new RedisLockProvider({ url, keyPrefix: uniqueId('failure'), connectTimeoutMs: CONNECT_TIMEOUT_MS, ...options });
    providers.push(provider);
    return provider;
  };
  const server = async (extraArgs: string[] = []): Promise<ThrowawayRedis> => {
    const created = await ThrowawayRedis.create(extraArgs);
    servers.push(created);
    return created;
  };
  /** Retries until the provider reaches Redis again (its own reconnection, no restart). */
  const recovered = async (provider: RedisLockProvider, key: string): Promise<Lock> => {
    let lock: Lock | undefined;
    await waitFor(
      async () => {
        lock = await provider.acquire(key, { waitTimeoutMs: 1000 }).catch(() => undefined);
        return lock !== undefined;
      },
      15_000,
      'the provider to reach Redis again',
    );
    return lock!;
  };

  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(servers.splice(0).map((s) => s.kill()));
  });

  it('fails fast with LockBackendError while Redis was never reachable, then works once it starts', async () => {
    const redis = await server(); // not started: nothing listens on its port
    const provider = make(redis.url);
    const locks = new LockService(provider);
    let ran = false;
    const started = Date.now();
    const error = await locks.run('down:a', () => (ran = true), { waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
    const failedAfter = Date.now() - started;
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toContain('down:a');
    expect(ran).toBe(false);
    // Bounded by the connect timeout, nowhere near the 60 s wait timeout.
    expect(failedAfter).toBeLessThan(CONNECT_TIMEOUT_MS + 4000);
    await expect(provider.tryAcquire('down:a')).rejects.toBeInstanceOf(LockBackendError);
    // A wait budget shorter than the bound is no reason to answer 429 for an outage.
    await expect(provider.acquire('down:a', { waitTimeoutMs: 50 })).rejects.toBeInstanceOf(LockBackendError);

    await redis.start();
    const lock = await recovered(provider, 'down:a');
    expect(lock.fencingToken).toBeGreaterThan(0n);
    await lock.release();
  }, 60_000);

  it("when Redis dies: waiters and newcomers get LockBackendError, the holder's signal aborts with LockLostError; it recovers after", async () => {
    const redis = await server();
    await redis.start();
    const provider = make(redis.url, { leaseMs: 600, heartbeatMs: 1500 });
    const holder = await provider.acquire('outage:a');
    const waiting = provider.acquire('outage:a', { waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
    await sleep(100);

    await redis.kill();
    const lost = new Promise<unknown>((resolve) =>
      holder.signal.addEventListener('abort', () => resolve(holder.signal.reason), { once: true }),
    );
    expect(await lost).toBeInstanceOf(LockLostError);
    expect(await waiting).toBeInstanceOf(LockBackendError);
    const started = Date.now();
    await expect(provider.acquire('outage:b', { waitTimeoutMs: 60_000 })).rejects.toBeInstanceOf(LockBackendError);
    expect(Date.now() - started).toBeLessThan(CONNECT_TIMEOUT_MS + 4000);
    await expect(holder.extend()).rejects.toBeInstanceOf(LockLostError);
    await holder.release().catch(() => undefined);

    await redis.start(); // same port, empty: the old lease and the fencing counter are gone with the data
    const again = await recovered(provider, 'outage:a');
    // The recreated counter starts from the clock, not from 1: fencing still increases.
    expect(again.fencingToken).toBeGreaterThan(holder.fencingToken);
    await again.release();
    // Scripts were re-sent to the new server (NOSCRIPT fallback) and nothing is left behind.
    const inspector = new Redis(redis.url);
    try {
      const keys = (await inspector.keys('*')).filter((k) => !provider.isFencingCounter(k));
      expect(keys).toEqual([]);
    } finally {
      inspector.disconnect();
    }
  }, 60_000);

  it('fails with LockBackendError within the bound while Redis refuses the client (reconnect cycles are no progress)', async () => {
    // Every reconnect connects its socket, then the ready check is refused (NOAUTH).
    const redis = await server(['--requirepass', 'not-the-one-the-client-has']);
    await redis.start();
    // A bound longer than the client's longest pause between reconnects (2 s): a bound
    // that counted a new socket as progress would never run out.
    const boundMs = 2500;
    const provider = make(redis.url, { connectTimeoutMs: boundMs });
    const started = Date.now();
    const error = await provider.acquire('refused:a', { waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toContain('NOAUTH');
    expect(Date.now() - started).toBeLessThan(boundMs + 4000);
    await expect(provider.acquire('refused:b', { waitTimeoutMs: 50 })).rejects.toBeInstanceOf(LockBackendError);
  }, 30_000);

  it('when Redis hangs (SIGSTOP): newcomers, waiters and releases fail with LockBackendError within the bound; it recovers after', async () => {
    const redis = await server();
    await redis.start();
    const provider = make(redis.url, { leaseMs: 1000, heartbeatMs: 900 });
    const holder = await provider.acquire('hung:a');
    const waiting = provider.acquire('hung:a', { waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
    await waitFor(() => provider.waitingKeys === 1, 5000, 'the waiter to take its place');

    redis.pause();
    try {
      const started = Date.now();
      // The connection is up, the server silent: only the backend bound can end these.
      const newcomer = await provider.acquire('hung:b', { waitTimeoutMs: 60_000 }).catch((e: unknown) => e);
      expect(newcomer).toBeInstanceOf(LockBackendError);
      expect((newcomer as Error).message).toContain('no reply from Redis');
      expect(Date.now() - started).toBeLessThan(CONNECT_TIMEOUT_MS + 4000);
      // A wait budget shorter than the bound is no reason to answer 429 for an outage.
      await expect(provider.acquire('hung:c', { waitTimeoutMs: 50 })).rejects.toBeInstanceOf(LockBackendError);
      await expect(provider.tryAcquire('hung:d')).rejects.toBeInstanceOf(LockBackendError);
      expect(await waiting).toBeInstanceOf(LockBackendError);
      await expect(holder.release()).rejects.toBeInstanceOf(LockBackendError);
    } finally {
      redis.resume();
    }

    // The server answers what it was sent meanwhile (the calls given up are undone),
    // and the same connection serves the next calls.
    const again = await recovered(provider, 'hung:a');
    expect(again.fencingToken).toBeGreaterThan(holder.fencingToken);
    await again.release();
    const inspector = new Redis(redis.url);
    try {
      await waitFor(
        async () => (await inspector.keys('*')).filter((k) => !provider.isFencingCounter(k)).length === 0,
        10_000,
        'nothing left in Redis',
      );
    } finally {
      inspector.disconnect();
    }
    expect(provider.waitingKeys).toBe(0);
  }, 60_000);

  it('when Redis hangs while replies are flowing, every call still waiting fails with LockBackendError within the bound', async () => {
    const redis = await server();
    await redis.start();
    const provider = make(redis.url);
    // 500 callers acquire and release their own keys in a loop: a steady stream of
    // commands and replies on the one connection, until the server freezes.
    let done = 0;
    let pausedAt = 0;
    const loop = async (n: number): Promise<unknown> => {
      for (;;) {
        try {
          const lock = await provider.acquire(`stream:${n}`, { waitTimeoutMs: 60_000 });
          await lock.release();
        } catch (error) {
          return error;
        }
        if (++done === 5000) {
          redis.pause();
          pausedAt = Date.now();
        }
      }
    };
    let failures: unknown[];
    try {
      failures = await Promise.all(Array.from({ length: 500 }, (_, n) => loop(n)));
    } finally {
      redis.resume();
    }
    const settledAfter = Date.now() - pausedAt;
    expect(pausedAt).toBeGreaterThan(0);
    expect(failures.filter((e) => !(e instanceof LockBackendError))).toEqual([]);
    // Bounded by the silence of the connection, nowhere near the 60 s wait budget.
    expect(settledAfter).toBeLessThan(CONNECT_TIMEOUT_MS + 4000);

    // Once it answers again, it runs what it was sent meanwhile and what the failed
    // calls took is undone: nothing is left.
    const inspector = new Redis(redis.url);
    try {
      await waitFor(
        async () => (await inspector.keys('*')).filter((k) => !provider.isFencingCounter(k)).length === 0,
        15_000,
        'nothing left in Redis',
      );
    } finally {
      inspector.disconnect();
    }
    const lock = await recovered(provider, 'stream:0');
    await lock.release();
  }, 60_000);

  it('keeps working after the script cache is flushed (EVALSHA falls back on NOSCRIPT)', async () => {
    const redis = await server();
    await redis.start();
    const provider = make(redis.url);
    const first = await provider.acquire('scripts:a');
    await first.release();
    const admin = new Redis(redis.url);
    try {
      await admin.script('FLUSH');
      const second = await provider.acquire('scripts:a');
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
    } finally {
      admin.disconnect();
    }
  }, 30_000);

  it('still hands over when the wake-up message is lost (subscriber connection killed)', async () => {
    const redis = await server();
    await redis.start();
    const keyPrefix = uniqueId('missed');
    const holderSide = make(redis.url, { keyPrefix });
    const waiterSide = make(redis.url, { keyPrefix, heartbeatMs: 1500 });
    const holder = await holderSide.acquire('missed:a');
    const waiting = waiterSide.acquire('missed:a', { waitTimeoutMs: 20_000 });
    const admin = new Redis(redis.url);
    try {
      await waitFor(async () => /\bsub=1\b/.test(String(await admin.client('LIST'))), 5000, "the waiter's subscription");
      // The waiter's process is deaf for a moment: the hand-off message goes nowhere.
      await admin.client('KILL', 'TYPE', 'pubsub');
      await holder.release();
      const lock = await waiting;
      expect(lock.key).toBe('missed:a');
      await lock.release();
    } finally {
      admin.disconnect();
    }
  }, 30_000);

  it('works through Sentinel (a client the app passes in), hand-off messages included', async () => {
    const master = await server();
    await master.start();
    const sentinel = await ThrowawayRedis.sentinel(master, 'locks');
    servers.push(sentinel);
    await sentinel.start();
    const client = new Redis({ sentinels: [{ host: '127.0.0.1', port: sentinel.port }], name: 'locks', lazyConnect: true });
    try {
      const keyPrefix = uniqueId('sentinel');
      const a = make(undefined, { client, keyPrefix });
      const b = make(undefined, { client, keyPrefix });
      const first = await a.acquire('sentinel:a');
      const waiting = b.acquire('sentinel:a', { waitTimeoutMs: 10_000 });
      await sleep(100);
      await first.release();
      const second = await waiting;
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
      // Through Sentinel, the locks live on the master.
      const direct = new Redis(master.url);
      expect(await direct.exists(a.redisKeysOf('sentinel:a').lock)).toBe(0);
      expect(await direct.exists(`${keyPrefix}:fence`)).toBe(1);
      direct.disconnect();
    } finally {
      await Promise.all(providers.splice(0).map((p) => p.close()));
      client.disconnect();
    }
  }, 30_000);

  it('times out a waiter normally while Redis is fine (LockTimeoutError, not LockBackendError)', async () => {
    const redis = await server();
    await redis.start();
    const provider = make(redis.url, { heartbeatMs: 300 });
    const holder = await provider.acquire('fine:a');
    // Several heart-beats / safety checks pass while it waits: none may fail it.
    await expect(provider.acquire('fine:a', { waitTimeoutMs: 800 })).rejects.toBeInstanceOf(LockTimeoutError);
    await holder.release();
  }, 30_000);
});
