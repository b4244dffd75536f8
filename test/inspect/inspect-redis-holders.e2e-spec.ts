import { Redis } from 'ioredis';
import { LockService, RedisLockProvider } from 'nestjs-serialized';
import { deleteKeysWithPrefix } from '../redis/support/delete-keys';
import { WorkerProcess } from '../support/processes';
import { TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

const LEASE_MS = 20_000;
const WORKER = 'test/redis/workers/holders.worker.ts';

/**
 * `LockService.inspect` of a Redis key held together (`shared`, `concurrency`) by
 * holders in other OS processes: each is listed with its own fencing token, lease
 * and shape, and nothing once they let go.
 */
describe('LockService.inspect of a Redis key held together by other processes', () => {
  const prefix = uniqueId('inspect-holders');
  let redis: Redis;
  let provider: RedisLockProvider;
  let locks: LockService;
  let workers: WorkerProcess[] = [];
  let ids = 0;

  beforeAll(async () => {
    workers = [0, 1].map((i) =>
      WorkerProcess.start(`inspect-holders-${i}`, WORKER, { REDIS_URL: TEST_REDIS_URL, KEY_PREFIX: prefix, LEASE_MS: String(LEASE_MS) }),
    );
    redis = new Redis(TEST_REDIS_URL);
    provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: prefix, leaseMs: LEASE_MS });
    locks = new LockService(provider);
    await Promise.all(workers.map((worker) => worker.waitForType('ready', 120_000)));
  }, 150_000);
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await provider.close();
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
  });

  async function enter(
    worker: WorkerProcess,
    key: string,
    shape: { shared?: boolean; concurrency?: number },
  ): Promise<{ id: string; fence: bigint }> {
    const id = `e${++ids}`;
    worker.send({ type: 'enter', id, key, rec: `${prefix}-rec:${key}`, limit: shape.concurrency ?? 1000, ...shape });
    const entered = await worker.waitFor((m) => m.type === 'entered' && m.id === id, 20_000);
    return { id, fence: BigInt(entered.fence as string) };
  }

  async function release(worker: WorkerProcess, id: string): Promise<void> {
    worker.send({ type: 'release', id });
    await worker.waitFor((m) => m.type === 'released' && m.id === id, 20_000);
  }

  it.each([
    ['readers (shared)', { shared: true }, true],
    ['a group (concurrency: 3)', { concurrency: 3 }, false],
  ] as const)(
    'lists %s of two other processes, each with its token and lease, and nothing once released',
    async (_name, shape, shared) => {
      const key = uniqueId('doc');
      const a = await enter(workers[0], key, shape);
      const b = await enter(workers[1], key, shape);

      const info = await locks.inspect(key);
      expect(info.waiting).toBe(0);
      expect(info.waitingHere).toBe(0);
      const listed = [...info.holders].sort((x, y) => (x.fencingToken! < y.fencingToken! ? -1 : 1));
      expect(listed).toEqual(
        [a.fence, b.fence]
          .sort((x, y) => (x < y ? -1 : 1))
          .map((fencingToken) => ({
            fencingToken,
            here: false,
            instance: expect.any(String),
            shared,
            leaseRemainingMs: expect.any(Number),
          })),
      );
      expect(new Set(listed.map((holder) => holder.instance)).size).toBe(2);
      for (const holder of listed) {
        expect(holder.leaseRemainingMs).toBeGreaterThan(0);
        expect(holder.leaseRemainingMs).toBeLessThanOrEqual(LEASE_MS);
      }

      await release(workers[0], a.id);
      await release(workers[1], b.id);
      expect(await locks.inspect(key)).toEqual({ key, holders: [], waiting: 0, waitingHere: 0 });
    },
    60_000,
  );
});
