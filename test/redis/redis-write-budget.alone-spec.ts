import * as net from 'node:net';
import { Redis } from 'ioredis';
import { LockService, RedisLockProvider } from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { deleteKeysWithPrefix } from './support/delete-keys';

/**
 * Performance budgets, not behaviour: how many system calls the sockets to Redis
 * make around a release (counted by wrapping `net.Socket`'s `_write`/`_writev`).
 * Kept out of the functional suites and run alone, after the rest (as
 * `redis-command-budget.alone-spec.ts`), so that a budget never fails for another
 * suite's load. That the key is free for another process once its release is
 * written is the functional suites' (test/contract/redis.contract.spec.ts).
 *
 * A release nobody is known to wait for does not take a system call of its own: what the
 * process sends after it leaves in the same write — until the end of the current turn when
 * the process holds no other lock (a caller that runs sections one after another: its next
 * acquisition), until the end of the event-loop iteration while it holds others (a busy
 * server: other requests' acquisitions). A release another process is known to wait for is
 * written at once. Either way the key is free for another process as soon as the write is
 * applied.
 */
describe('Redis write budget of a release (a budget suite, not a functional one): it shares its write with the next command', () => {
  const prefix = uniqueId('release-write');
  const redisPort = Number(new URL(TEST_REDIS_URL).port || 6379);
  let redis: Redis;
  let provider: RedisLockProvider;
  let other: RedisLockProvider;

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
    other = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix });
  });

  afterAll(async () => {
    await Promise.all([provider.close(), other.close()]);
    await deleteKeysWithPrefix(redis, prefix);
    await redis.quit();
  });

  /** System calls the sockets to Redis made while `during` ran: one per `_write` or `_writev` (Node's stream contract). */
  async function writesDuring(during: () => Promise<void>): Promise<{ calls: number; commands: number }[]> {
    const seen: { calls: number; commands: number }[] = [];
    const proto = net.Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    const original = { _write: proto._write, _writev: proto._writev };
    const toRedis = (socket: net.Socket) => socket.remotePort === redisPort;
    proto._write = function (this: net.Socket, ...args: unknown[]) {
      if (toRedis(this)) seen.push({ calls: 1, commands: 1 });
      return original._write.apply(this, args);
    };
    proto._writev = function (this: net.Socket, ...args: unknown[]) {
      if (toRedis(this)) seen.push({ calls: 1, commands: (args[0] as unknown[]).length });
      return original._writev.apply(this, args);
    };
    try {
      await during();
    } finally {
      proto._write = original._write;
      proto._writev = original._writev;
    }
    return seen;
  }

  const iterationEnds = () => new Promise((resolve) => setImmediate(resolve));

  /** The writes of two sections in a row on fresh keys (the release leaves at the latest when the iteration ends). */
  const twoSectionsInARow = (service: LockService) =>
    writesDuring(async () => {
      await service.run(uniqueId('first'), () => undefined);
      await service.run(uniqueId('second'), () => undefined);
      await iterationEnds();
    });

  /** first's acquisition; first's release + second's acquisition, in one write; second's release. */
  const RELEASE_SHARED_WITH_NEXT = [
    { calls: 1, commands: 1 },
    { calls: 1, commands: 2 },
    { calls: 1, commands: 1 },
  ];

  it("sends a sequential caller's release and next acquisition in one system call when the process holds no other lock", async () => {
    const service = new LockService(provider);
    await service.run('warm-up', () => undefined);
    // The warm-up's release leaves, and the wake-up channel its first lock opened is listening, before the count starts.
    await new Promise((resolve) => setTimeout(resolve, 100));
    // run() resolves once the release is handed to the connection; with nothing else held it leaves at the end of the turn.
    expect(await twoSectionsInARow(service)).toEqual(RELEASE_SHARED_WITH_NEXT);
  });

  it('writes a lone release by the end of its turn when nothing follows it', async () => {
    const service = new LockService(provider);
    await service.run('warm-up-alone', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const writes = await writesDuring(async () => {
      await service.run('alone', () => undefined);
      // Not an iteration: only the turn's end (process.nextTick's queue) may pass.
      await new Promise((resolve) => process.nextTick(resolve));
    });
    expect(writes).toEqual([
      { calls: 1, commands: 1 },
      { calls: 1, commands: 1 },
    ]);
    // Another instance finds the key free.
    const next = await other.tryAcquire('alone');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it("sends a sequential caller's release and next acquisition in one system call while the process holds another lock", async () => {
    const service = new LockService(provider);
    const background = await provider.acquire(uniqueId('background'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // With another lock held the release leaves at the end of the event-loop iteration.
    expect(await twoSectionsInARow(service)).toEqual(RELEASE_SHARED_WITH_NEXT);
    await background.release();
  });

  it('sends a release and the acquisitions of later callbacks of the same event-loop iteration in one system call', async () => {
    // What an HTTP server does under load: one request's handler ends (its release), then
    // the next callbacks of the same iteration read other requests and acquire their keys.
    const held = await Promise.all([provider.acquire('iteration-a'), provider.acquire('iteration-b')]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const taken: Promise<{ release(): Promise<void> }>[] = [];
    const writes = await writesDuring(
      () =>
        new Promise<void>((resolve) => {
          // Three callbacks queued for one check phase: immediates queued while it runs wait for the next one.
          setImmediate(() => void held[0].release());
          setImmediate(() => taken.push(provider.acquire(uniqueId('iteration-next'))));
          setImmediate(() => taken.push(provider.acquire(uniqueId('iteration-next'))));
          setImmediate(() => setImmediate(resolve));
        }),
    );
    expect(writes).toEqual([{ calls: 1, commands: 3 }]);
    for (const lock of [...(await Promise.all(taken)), held[1]]) await lock.release();
  });

  it('writes a release at once when another process is known to wait for the key', async () => {
    // The holder's process listens for other processes' waiters from its first lock on.
    await provider.acquire('listen').then((l) => l.release());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const lock = await provider.acquire('wanted');
    const taken = other.acquire('wanted', { waitTimeoutMs: 5000 });
    // The waiter's acquisition queued it behind the holder and told the holder's process.
    await new Promise((resolve) => setTimeout(resolve, 100));
    let next: Promise<unknown> | undefined;
    const writes = await writesDuring(async () => {
      void lock.release();
      next = provider.acquire('unrelated');
      await new Promise((resolve) => setImmediate(resolve));
    });
    // The release left alone, before the acquisition that followed it in the same turn.
    expect(writes).toEqual([
      { calls: 1, commands: 1 },
      { calls: 1, commands: 1 },
    ]);
    const handed = await taken;
    expect(handed.fencingToken > lock.fencingToken).toBe(true);
    await Promise.all([handed.release(), ((await next) as { release(): Promise<void> }).release()]);
  });

  it('still frees the key at once for another provider instance when nothing follows the release', async () => {
    const lock = await provider.acquire('lone');
    const taken = other.acquire('lone', { waitTimeoutMs: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const releasedAt = performance.now();
    await lock.release();
    const next = await taken;
    // Handed over by the release script itself: one round trip, not a lease or heart-beat later.
    expect(performance.now() - releasedAt).toBeLessThan(1000);
    expect(next.fencingToken > lock.fencingToken).toBe(true);
    await next.release();
  });
});
