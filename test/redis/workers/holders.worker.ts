/**
 * A separate OS process taking keys beside others (`concurrency`, `shared`) through
 * its own RedisLockProvider, driven by the test over IPC, with a recorder in Redis
 * that every process shares. Environment: REDIS_URL, KEY_PREFIX, LEASE_MS, HEARTBEAT_MS.
 *
 * The recorder (keys named by the test, all under `rec`): `<rec>:inside` holders
 * inside now, `<rec>:writers` writers inside now, `<rec>:peak` most inside at once,
 * `<rec>:violations` entries that broke the rule (more than `limit` inside, a writer
 * beside anyone, a reader beside a writer or a group, or a fencing token not above
 * that of a section that had left before it entered — for a holder beside others, of a
 * writer that had left), `<rec>:exited` the greatest token of a
 * section that left, `<rec>:fences` every token granted, `<rec>:order` "<id> <fence>"
 * in order of entry.
 *
 * Commands:
 * - {type:'enter', id, key, rec, limit, concurrency?, shared?, waitTimeoutMs?}: waits
 *   for the key (no `concurrency` and no `shared`: an exclusive caller, a writer), enters
 *   the recorder, replies {type:'entered', id, fence}; leaves and releases on
 *   {type:'release', id}, replying {type:'released', id}. A failed wait replies
 *   {type:'failed', id, name}. When its `signal` aborts (the lock was lost) it replies
 *   {type:'lost', id, name}.
 * - {type:'try', id, key, rec, limit, concurrency?, shared?}: `tryAcquire`; replies
 *   {type:'tried', id, fence} (fence '' when it got nothing), then holds as `enter`.
 * - {type:'loop', id, key, rec, limit, parallel, rounds, holdMs, concurrency?, shared?}:
 *   `parallel` callers each run `rounds` sections through `LockService.run`, inside the
 *   recorder for `holdMs`; replies {type:'loop-done', id}.
 * - {type:'stall', ms}: replies {type:'stalling'}, blocks its event loop for `ms`, then
 *   replies {type:'stalled'}.
 */
import { Redis } from 'ioredis';
import type { Lock } from 'nestjs-serialized';
import { LockService } from 'nestjs-serialized/lock.service';
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };
interface Shape {
  concurrency?: number;
  shared?: boolean;
}

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const provider = new RedisLockProvider({
  url: redisUrl,
  keyPrefix: process.env.KEY_PREFIX!,
  leaseMs: Number(process.env.LEASE_MS ?? 30_000),
  heartbeatMs: process.env.HEARTBEAT_MS ? Number(process.env.HEARTBEAT_MS) : undefined,
});
const locks = new LockService(provider);
const data = new Redis(redisUrl);
const exits = new Map<string, () => Promise<void>>();

// KEYS: inside, writers, peak, violations, exited, fences, order, readers, exited writers
// ARGV: kind ('1' writer, 'r' reader, 'g' group member), limit, fence, id
const ENTER = `
local inside = redis.call('INCR', KEYS[1])
local writers = tonumber(redis.call('GET', KEYS[2]) or '0')
local readers = tonumber(redis.call('GET', KEYS[8]) or '0')
if ARGV[1] == '1' then writers = redis.call('INCR', KEYS[2]) end
if ARGV[1] == 'r' then readers = redis.call('INCR', KEYS[8]) end
local groups = inside - writers - readers
local peak = tonumber(redis.call('GET', KEYS[3]) or '0')
if inside > peak then redis.call('SET', KEYS[3], inside) end
-- A writer's token is above every token that left before it entered (nobody holds beside
-- it, so they were all granted before it); a holder beside others only above those of the
-- writers that left (a holder beside it may have been granted after it and left first).
local exited = tonumber(redis.call('GET', KEYS[ARGV[1] == '1' and 5 or 9]) or '0')
local bad = inside > tonumber(ARGV[2]) or (ARGV[1] == '1' and inside > 1) or (ARGV[1] ~= '1' and writers > 0)
  or (ARGV[1] == 'r' and groups > 0) or (ARGV[1] == 'g' and readers > 0) or tonumber(ARGV[3]) <= exited
if bad then
  redis.call('INCR', KEYS[4])
  redis.call('RPUSH', KEYS[7], 'BAD ' .. ARGV[4] .. ' ' .. ARGV[1] .. ' inside=' .. inside .. ' w=' .. writers .. ' r=' .. readers
    .. ' fence=' .. ARGV[3] .. ' exited=' .. string.format('%.0f', exited))
end
redis.call('RPUSH', KEYS[6], ARGV[3])
redis.call('RPUSH', KEYS[7], ARGV[4] .. ' ' .. ARGV[3])
return inside`;
// KEYS: inside, writers, exited, readers, exited writers; ARGV: kind, fence
const LEAVE = `
redis.call('DECR', KEYS[1])
if ARGV[1] == '1' then redis.call('DECR', KEYS[2]) end
if ARGV[1] == 'r' then redis.call('DECR', KEYS[4]) end
if tonumber(ARGV[2]) > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], ARGV[2]) end
if ARGV[1] == '1' and tonumber(ARGV[2]) > tonumber(redis.call('GET', KEYS[5]) or '0') then redis.call('SET', KEYS[5], ARGV[2]) end
return 1`;

const send = (message: Command): void => {
  process.send?.(message);
};

function shapeOf(command: Command): Shape {
  const shape: Shape = {};
  if (command.concurrency !== undefined) shape.concurrency = command.concurrency as number;
  if (command.shared !== undefined) shape.shared = command.shared as boolean;
  return shape;
}

async function enterRecorder(rec: string, shape: Shape, limit: number, lock: Lock, id: string): Promise<() => Promise<void>> {
  const writer = shape.shared ? 'r' : (shape.concurrency ?? 1) === 1 ? '1' : 'g';
  const fence = lock.fencingToken.toString();
  await data.eval(
    ENTER,
    9,
    `${rec}:inside`,
    `${rec}:writers`,
    `${rec}:peak`,
    `${rec}:violations`,
    `${rec}:exited`,
    `${rec}:fences`,
    `${rec}:order`,
    `${rec}:readers`,
    `${rec}:exited-writers`,
    writer,
    limit,
    fence,
    id,
  );
  return async () => {
    await data.eval(LEAVE, 5, `${rec}:inside`, `${rec}:writers`, `${rec}:exited`, `${rec}:readers`, `${rec}:exited-writers`, writer, fence);
  };
}

async function enter(command: Command): Promise<void> {
  const { id, key, rec, limit, waitTimeoutMs } = command as unknown as {
    id: string;
    key: string;
    rec: string;
    limit: number;
    waitTimeoutMs?: number;
  };
  const shape = shapeOf(command);
  let lock: Lock;
  try {
    lock = await provider.acquire(key, { ...shape, waitTimeoutMs });
  } catch (error) {
    send({ type: 'failed', id, name: (error as Error).name, message: (error as Error).message });
    return;
  }
  lock.signal.addEventListener('abort', () => send({ type: 'lost', id, name: (lock.signal.reason as Error)?.name }), { once: true });
  const leave = await enterRecorder(rec, shape, limit, lock, id);
  exits.set(id, async () => {
    await leave();
    await lock.release();
  });
  send({ type: 'entered', id, fence: lock.fencingToken.toString() });
}

async function attempt(command: Command): Promise<void> {
  const { id, key, rec, limit } = command as unknown as { id: string; key: string; rec: string; limit: number };
  const shape = shapeOf(command);
  const lock = await provider.tryAcquire(key, shape);
  if (!lock) return send({ type: 'tried', id, fence: '' });
  const leave = await enterRecorder(rec, shape, limit, lock, id);
  exits.set(id, async () => {
    await leave();
    await lock.release();
  });
  send({ type: 'tried', id, fence: lock.fencingToken.toString() });
}

async function loop(command: Command): Promise<void> {
  const { key, rec, limit, parallel, rounds, holdMs } = command as unknown as {
    key: string;
    rec: string;
    limit: number;
    parallel: number;
    rounds: number;
    holdMs: number;
  };
  const shape = shapeOf(command);
  await Promise.all(
    Array.from({ length: parallel }, async (_, caller) => {
      for (let round = 0; round < rounds; round++) {
        await locks.run(
          key,
          async (lock) => {
            const leave = await enterRecorder(rec, shape, limit, lock, `${process.pid}.${caller}.${round}`);
            await new Promise((resolve) => setTimeout(resolve, holdMs));
            await leave();
          },
          { ...shape, waitTimeoutMs: 60_000 },
        );
      }
    }),
  );
  send({ type: 'loop-done', id: command.id });
}

/** The most holders a section of `shape` accepts (readers: any number). */
const limitOf = (shape: Shape): number => (shape.shared ? 1000 : (shape.concurrency ?? 1));

/**
 * `mixed`: `parallel` callers each run `rounds` sections of one key, each picking its
 * shape at random among `shapes`, and with `giveUps` as the share of sections that
 * give up while waiting (a short budget or an abort); replies {type:'mixed-done', id,
 * entered, gaveUp}.
 */
async function mixed(command: Command): Promise<void> {
  const { key, rec, parallel, rounds, holdMs, shapes, giveUps } = command as unknown as {
    key: string;
    rec: string;
    parallel: number;
    rounds: number;
    holdMs: number;
    shapes: Shape[];
    giveUps: number;
  };
  let entered = 0;
  let gaveUp = 0;
  await Promise.all(
    Array.from({ length: parallel }, async (_, caller) => {
      for (let round = 0; round < rounds; round++) {
        const shape = shapes[Math.floor(Math.random() * shapes.length)];
        const giveUp = Math.random() < giveUps;
        const controller = new AbortController();
        const abort =
          giveUp && Math.random() < 0.5 ? setTimeout(() => controller.abort(new Error('gave up')), Math.random() * 20) : undefined;
        try {
          await locks.run(
            key,
            async (lock) => {
              const leave = await enterRecorder(rec, shape, limitOf(shape), lock, `${process.pid}.${caller}.${round}`);
              await new Promise((resolve) => setTimeout(resolve, Math.random() * holdMs));
              await leave();
            },
            { ...shape, waitTimeoutMs: giveUp && !abort ? 1 + Math.floor(Math.random() * 20) : 60_000, signal: controller.signal },
          );
          entered++;
        } catch {
          gaveUp++;
        } finally {
          clearTimeout(abort);
        }
      }
    }),
  );
  send({ type: 'mixed-done', id: command.id, entered, gaveUp });
}

process.on('message', (command: Command) => {
  const fail = (error: unknown): void => send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  switch (command.type) {
    case 'enter':
      enter(command).catch(fail);
      break;
    case 'try':
      attempt(command).catch(fail);
      break;
    case 'loop':
      loop(command).catch(fail);
      break;
    case 'mixed':
      mixed(command).catch(fail);
      break;
    case 'stall': {
      send({ type: 'stalling' });
      const until = Date.now() + (command.ms as number);
      while (Date.now() < until) {
        // A synchronous burst: nothing else of this process runs meanwhile.
      }
      send({ type: 'stalled' });
      break;
    }
    case 'release': {
      const exit = exits.get(command.id as string);
      exits.delete(command.id as string);
      exit?.().then(() => send({ type: 'released', id: command.id as string }), fail);
      break;
    }
  }
});

// Orphaned (the test died): nothing to serve.
process.on('disconnect', () => process.exit(0));

provider
  .tryAcquire(`warm-up-${process.pid}`)
  .then((lock) => lock?.release())
  .then(() => data.ping())
  .then(
    () => send({ type: 'ready', pid: process.pid }),
    (error) => send({ type: 'error', message: String(error) }),
  );
