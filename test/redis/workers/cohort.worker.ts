/**
 * A separate OS process with its own RedisLockProvider (local hand-off in the mode
 * given by HANDOFF), driven by the test over IPC. Environment: REDIS_URL, KEY_PREFIX,
 * LEASE_MS, HEARTBEAT_MS, HANDOFF ('strict' | 'cohort'), MAX_LOCAL_HANDOFFS.
 *
 * Commands:
 * - {type:'burst', key, count, insideKey, overlapKey, tokensKey, holdMs}: starts
 *   `count` waiters of `key` at once. Each, holding the key, counts itself in on
 *   `insideKey` (above 1 is an overlap, counted on `overlapKey`), appends
 *   "<pid> <fence>" to `tokensKey`, keeps the key `holdMs` (0: one turn of the
 *   event loop), counts itself out and releases. Replies {type:'burst-done',
 *   failed, longestWaitMs, localHandOffs}.
 * - {type:'acquire', id, key, waitTimeoutMs, recordKey}: waits for the key, appends
 *   `id` to `recordKey` while holding, replies {type:'acquired', id, fence}; releases on
 *   {type:'release', id} and replies {type:'released', id}.
 * - {type:'stats'}: replies {type:'stats', localHandOffs}.
 */
import { Redis } from 'ioredis';
import type { Lock } from 'nestjs-serialized';
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const provider = new RedisLockProvider({
  url: redisUrl,
  keyPrefix: process.env.KEY_PREFIX!,
  leaseMs: Number(process.env.LEASE_MS ?? 30_000),
  heartbeatMs: process.env.HEARTBEAT_MS ? Number(process.env.HEARTBEAT_MS) : undefined,
  handoff: (process.env.HANDOFF ?? 'strict') as 'strict' | 'cohort',
  maxLocalHandOffs: process.env.MAX_LOCAL_HANDOFFS ? Number(process.env.MAX_LOCAL_HANDOFFS) : undefined,
});
const data = new Redis(redisUrl);
const held = new Map<string, Lock>();

const send = (message: Command): void => {
  process.send?.(message);
};

async function burst(command: Command): Promise<void> {
  const { key, count, insideKey, overlapKey, tokensKey, holdMs } = command as unknown as Record<string, string> & {
    count: number;
    holdMs: number;
  };
  let longestWaitMs = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: count }, async () => {
      const startedAt = performance.now();
      let lock: Lock;
      try {
        lock = await provider.acquire(key, { waitTimeoutMs: 60_000 });
      } catch {
        failed++;
        return;
      }
      longestWaitMs = Math.max(longestWaitMs, performance.now() - startedAt);
      try {
        if ((await data.incr(insideKey)) > 1) await data.incr(overlapKey);
        await data.rpush(tokensKey, `${process.pid} ${lock.fencingToken}`);
        if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
        else await new Promise((resolve) => setImmediate(resolve));
        await data.decr(insideKey);
      } finally {
        await lock.release();
      }
    }),
  );
  send({ type: 'burst-done', failed, longestWaitMs, localHandOffs: provider.localHandOffs });
}

async function acquire(command: Command): Promise<void> {
  const { id, key, waitTimeoutMs, recordKey } = command as unknown as {
    id: string;
    key: string;
    waitTimeoutMs?: number;
    recordKey: string;
  };
  try {
    const lock = await provider.acquire(key, { waitTimeoutMs });
    await data.rpush(recordKey, id);
    held.set(id, lock);
    send({ type: 'acquired', id, fence: lock.fencingToken.toString() });
  } catch (error) {
    send({ type: 'failed', id, name: (error as Error).name, message: (error as Error).message });
  }
}

process.on('message', (command: Command) => {
  const fail = (error: unknown): void => send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  switch (command.type) {
    case 'burst':
      burst(command).catch(fail);
      break;
    case 'acquire':
      acquire(command).catch(fail);
      break;
    case 'release': {
      const lock = held.get(command.id as string);
      held.delete(command.id as string);
      (lock ? lock.release() : Promise.resolve()).then(() => send({ type: 'released', id: command.id }), fail);
      break;
    }
    case 'stats':
      send({ type: 'stats', localHandOffs: provider.localHandOffs });
      break;
    case 'exit':
      Promise.all([provider.close(), data.quit()]).finally(() => process.exit(0));
      break;
  }
});

// Orphaned (the test died): nothing to serve.
process.on('disconnect', () => process.exit(0));

// Connected and scripts warmed, so the test's timing starts from a ready process.
provider
  .tryAcquire(`warm-up-${process.pid}`)
  .then((lock) => lock?.release())
  .then(() => data.ping())
  .then(
    () => send({ type: 'ready', pid: process.pid }),
    (error) => send({ type: 'error', message: String(error) }),
  );
