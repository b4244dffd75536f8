/**
 * A separate OS process holding locks through its own RedisLockProvider, driven by
 * the test over IPC. Environment: REDIS_URL, KEY_PREFIX, LEASE_MS, HEARTBEAT_MS.
 *
 * Commands:
 * - {type:'counter', key, rounds, counterKey, markerKey, overlapKey, tokensKey}:
 *   `rounds` critical sections doing read-modify-write on a Redis counter; a
 *   Redis-side marker detects overlap; each section appends its fencing token.
 *   Replies {type:'counter-done'}.
 * - {type:'acquire', id, key, waitTimeoutMs, hold, recordKey?}: waits for the key,
 *   replies {type:'acquired', id, fence, token (the owner token in Redis)}; appends `id` to `recordKey` while holding;
 *   releases after `hold` ms, or on {type:'release', id} when `hold` is -1.
 * - {type:'section', id, key, waitTimeoutMs, insideKey, overlapKey, orderKey}: waits
 *   for the key, then counts itself in on `insideKey` (INCR; above 1 is an overlap,
 *   counted on `overlapKey`), appends "<id> <fence>" to `orderKey` and replies
 *   {type:'entered', id, fence}; on {type:'release', id} it counts itself out, releases
 *   and replies {type:'released', id}. A failed wait replies {type:'failed', id, name}.
 * - {type:'stall', ms}: replies {type:'stalling'}, then blocks its event loop with a
 *   synchronous busy loop for `ms`, then replies {type:'stalled'}.
 *
 * Its 'ready' message carries its provider's session (the first part of its owner tokens).
 */
import { Redis } from 'ioredis';
import type { Lock } from 'nestjs-serialized';
// Only the two modules this process needs (still by package name): loading the whole
// entry point through ts-node doubles the start-up of every worker process.
import { LockService } from 'nestjs-serialized/lock.service';
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const provider = new RedisLockProvider({
  url: redisUrl,
  keyPrefix: process.env.KEY_PREFIX!,
  leaseMs: Number(process.env.LEASE_MS ?? 30_000),
  heartbeatMs: process.env.HEARTBEAT_MS ? Number(process.env.HEARTBEAT_MS) : undefined,
});
const locks = new LockService(provider);
const data = new Redis(redisUrl);
const held = new Map<string, Lock>();
/** Sections waiting for {type:'release'}: what leaving each one takes. */
const exits = new Map<string, () => Promise<void>>();

const send = (message: Command): void => {
  process.send?.(message);
};

async function counter(command: Command): Promise<void> {
  const { key, rounds, counterKey, markerKey, overlapKey, tokensKey } = command as unknown as Record<string, string> & { rounds: number };
  for (let i = 0; i < rounds; i++) {
    await locks.run(key, async (lock) => {
      // Another process inside the same critical section would find the marker set.
      if ((await data.set(markerKey, String(process.pid), 'PX', 60_000, 'NX')) !== 'OK') await data.incr(overlapKey);
      const value = Number((await data.get(counterKey)) ?? 0);
      await new Promise((resolve) => setImmediate(resolve));
      await data.set(counterKey, String(value + 1));
      await data.rpush(tokensKey, lock.fencingToken.toString());
      await data.del(markerKey);
    });
  }
  send({ type: 'counter-done' });
}

async function acquire(command: Command): Promise<void> {
  const { id, key, waitTimeoutMs, hold, recordKey } = command as unknown as {
    id: string;
    key: string;
    waitTimeoutMs?: number;
    hold: number;
    recordKey?: string;
  };
  try {
    const lock = await provider.acquire(key, { waitTimeoutMs });
    if (recordKey) await data.rpush(recordKey, id);
    send({ type: 'acquired', id, fence: lock.fencingToken.toString(), token: (lock as { token?: string }).token });
    if (hold >= 0) {
      await new Promise((resolve) => setTimeout(resolve, hold));
      await lock.release();
      send({ type: 'released', id });
    } else {
      held.set(id, lock);
    }
  } catch (error) {
    send({ type: 'failed', id, name: (error as Error).name, message: (error as Error).message });
  }
}

async function section(command: Command): Promise<void> {
  const { id, key, waitTimeoutMs, insideKey, overlapKey, orderKey } = command as unknown as Record<string, string> & {
    waitTimeoutMs?: number;
  };
  let lock: Lock;
  try {
    lock = await provider.acquire(key, { waitTimeoutMs });
  } catch (error) {
    send({ type: 'failed', id, name: (error as Error).name, message: (error as Error).message });
    return;
  }
  // Counted in Redis, so that sections of different processes see each other.
  if ((await data.incr(insideKey)) > 1) await data.incr(overlapKey);
  await data.rpush(orderKey, `${id} ${lock.fencingToken}`);
  exits.set(id, async () => {
    await data.decr(insideKey);
    await lock.release();
  });
  send({ type: 'entered', id, fence: lock.fencingToken.toString() });
}

function stall(ms: number): void {
  send({ type: 'stalling' });
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // A synchronous burst: nothing else of this process runs meanwhile.
  }
  send({ type: 'stalled' });
}

process.on('message', (command: Command) => {
  const fail = (error: unknown): void => send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  switch (command.type) {
    case 'counter':
      counter(command).catch(fail);
      break;
    case 'acquire':
      acquire(command).catch(fail);
      break;
    case 'section':
      section(command).catch(fail);
      break;
    case 'stall':
      stall(command.ms as number);
      break;
    case 'release': {
      const exit = exits.get(command.id as string);
      if (exit) {
        exits.delete(command.id as string);
        exit().then(() => send({ type: 'released', id: command.id as string }), fail);
        break;
      }
      const lock = held.get(command.id as string);
      held.delete(command.id as string);
      lock?.release().then(() => send({ type: 'released', id: command.id as string }), fail);
      break;
    }
    case 'exit':
      Promise.all([provider.close(), data.quit()]).finally(() => process.exit(0));
      break;
  }
});

// Orphaned (the test died): nothing to serve.
process.on('disconnect', () => process.exit(0));

// Connected and scripts warmed, so the test's timing starts from a ready process.
let session = '';
provider
  .tryAcquire(`warm-up-${process.pid}`)
  .then((lock) => {
    session = String((lock as { token?: string } | null)?.token ?? '').split(':')[0];
    return lock?.release();
  })
  .then(() => data.ping())
  .then(
    () => send({ type: 'ready', pid: process.pid, session }),
    (error) => send({ type: 'error', message: String(error) }),
  );
