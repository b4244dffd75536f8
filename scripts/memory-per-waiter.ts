/**
 * `node --expose-gc -r ts-node/register/transpile-only -r tsconfig-paths/register scripts/memory-per-waiter.ts [waiters] [drivers]`
 *
 * Heap per waiter and per held key, for each provider (docs/memory.md):
 * - waiters: `waiters` callers (default 100,000, the default `maxPendingTotal`) of
 *   `LockService.run` queued behind a few held keys, all in one process; heap after
 *   `global.gc()` minus the heap before, ÷ waiters, minus the same harness with no
 *   lock (a promise that never settles and its `.catch`). On Redis the count is taken
 *   once every waiter has its place in the Redis queue (ZCARD), so replies and
 *   in-flight commands are over. Then one more caller shows the cap: `LockBusyError`.
 * - held keys: that many distinct keys held at once through `provider.acquire`, ÷ keys.
 * Redis and PostgreSQL are the local servers (REDIS_URL / DATABASE_URL); each run
 * uses a fresh key prefix and leaves nothing behind (the provider's shutdown).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  InMemoryLockProvider,
  LockBusyError,
  LockService,
  PostgresLockProvider,
  RedisLockProvider,
  type Lock,
  type LockProvider,
} from 'nestjs-serialized';

type Provider = LockProvider & { close(): Promise<void> };
type Driver = 'memory' | 'redis' | 'postgres';

const WAITERS = Number(process.argv[2] ?? 100_000);
const DRIVERS = (process.argv[3] ?? 'memory,redis,postgres').split(',') as Driver[];
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
/** Keys the waiters queue behind (PostgreSQL: each holds a lock session). */
const WAIT_KEYS = 8;
const HELD_KEYS: Record<Driver, number> = { memory: 100_000, redis: 10_000, postgres: 20 };

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

async function heap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc!();
  }
  return process.memoryUsage().heapUsed;
}

function create(driver: Driver, options: { maxPending?: number; lockPoolSize?: number } = {}): Provider {
  const keyPrefix = `mem-${randomUUID().slice(0, 8)}`;
  const common = { keyPrefix, maxPending: options.maxPending, waitTimeoutMs: 600_000, shutdownGraceMs: 600_000 };
  if (driver === 'memory') return new InMemoryLockProvider(common);
  if (driver === 'redis') return new RedisLockProvider({ url: REDIS_URL, ...common });
  return new PostgresLockProvider({ connectionString: DATABASE_URL, lockPoolSize: options.lockPoolSize ?? 10, ...common });
}

async function waitUntil(predicate: () => Promise<boolean>, what: string, timeoutMs = 600_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The harness alone: as many never-settling promises, each with its `.catch`. */
async function controlBytesPerWaiter(): Promise<number> {
  const before = await heap();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < WAITERS; i++) pending.push(new Promise<void>(() => undefined).catch((error: unknown) => error));
  const after = await heap();
  pending.length = 0;
  return (after - before) / WAITERS;
}

async function bytesPerWaiter(driver: Driver, through: 'service' | 'provider'): Promise<{ bytes: number; capRefused: boolean }> {
  const step = (what: string) => process.env.MEM_DEBUG && console.error(driver, through, what);
  const provider = create(driver, { maxPending: WAITERS });
  const locks = new LockService(provider);
  const keys = Array.from({ length: WAIT_KEYS }, (_, i) => `wait-${i}`);
  step('acquiring holders');
  const holders = await Promise.all(keys.map((key) => provider.acquire(key)));
  step('held');
  const before = await heap();
  const pending: Promise<unknown>[] = [];
  const call = (key: string) =>
    through === 'service' ? locks.run(key, () => undefined) : provider.acquire(key).then((lock) => lock.release());
  for (let i = 0; i < WAITERS; i++) pending.push(call(keys[i % WAIT_KEYS]).catch((error: unknown) => error));
  if (driver === 'redis') {
    const redis = new Redis(REDIS_URL);
    const queued = async () => {
      let total = 0;
      for (const key of keys) total += await redis.zcard((provider as RedisLockProvider).redisKeysOf(key).queue);
      return total;
    };
    await waitUntil(async () => (await queued()) >= WAITERS, 'every waiter queued in Redis');
    await redis.quit();
  }
  step('queued');
  const after = await heap();
  step('measured');
  // At the default cap, one more caller of a busy key is refused at once.
  const extra = WAITERS >= 100_000 ? await call(keys[0]).catch((error: unknown) => error) : undefined;
  const capRefused = extra instanceof LockBusyError && extra.reason === 'max-pending-total';
  step('closing');
  const closing = provider.close();
  await Promise.all(holders.map((holder) => holder.release()));
  await closing;
  await Promise.all(pending);
  return { bytes: (after - before) / WAITERS, capRefused };
}

async function bytesPerHeldKey(driver: Driver): Promise<number> {
  const count = HELD_KEYS[driver];
  const provider = create(driver, { lockPoolSize: count + 2 });
  const keys = Array.from({ length: count }, (_, i) => `held-${i}`);
  const held: Lock[] = [];
  const before = await heap();
  for (let i = 0; i < count; i += 1000) held.push(...(await Promise.all(keys.slice(i, i + 1000).map((key) => provider.acquire(key)))));
  const after = await heap();
  await Promise.all(held.map((lock) => lock.release()));
  await provider.close();
  return (after - before) / count;
}

async function main(): Promise<void> {
  const control = await controlBytesPerWaiter();
  console.log(`harness control: ${control.toFixed(0)} bytes per pending call (subtracted below)`);
  console.log(
    `| provider | per waiter, LockService.run / @Serialized | per waiter, provider.acquire | 100,000 waiters (the default cap) | refused past the cap | per held key |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  const mb = (bytes: number) => `${((bytes * 100_000) / 1048576).toFixed(0)} MB`;
  for (const driver of DRIVERS) {
    const service = await bytesPerWaiter(driver, 'service');
    const direct = await bytesPerWaiter(driver, 'provider');
    const heldKey = await bytesPerHeldKey(driver);
    const [s, d] = [service.bytes - control, direct.bytes - control];
    console.log(
      `| ${driver} | ${Math.round(s)} B | ${Math.round(d)} B | ${mb(s)} / ${mb(d)} | ${service.capRefused && direct.capRefused ? 'yes' : 'no'} | ${Math.round(heldKey)} B (${HELD_KEYS[driver].toLocaleString('en-US')} keys held) |`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
