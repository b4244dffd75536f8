/**
 * Callers of one key in a process of their own (an app instance), through
 * LockService and a Redis or PostgreSQL provider, driven by the test over IPC.
 * Env: DRIVER (redis | postgres), REDIS_URL / DATABASE_URL, KEY_PREFIX, KEY, MAX_PENDING.
 *
 * Commands:
 * - {type:'callers', count}: `count` callers of KEY at once (callers 0..count-1, in
 *   that order). Each reports {type:'entered', i} when it holds the key and keeps it
 *   until {type:'release', i}; one refused reports {type:'refused', i, name, reason}.
 * - {type:'caller', i}: one more caller, numbered i.
 */
import type { Lock } from 'nestjs-serialized';
// Deep imports: a worker that loads only what it uses starts in half the time.
import { LockService } from 'nestjs-serialized/lock.service';
import type { LockProvider } from 'nestjs-serialized/lock.provider';
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.(message);
};
const key = process.env.KEY!;
const common = { keyPrefix: process.env.KEY_PREFIX, maxPending: Number(process.env.MAX_PENDING), waitTimeoutMs: 30_000 };
const provider: LockProvider =
  process.env.DRIVER === 'redis'
    ? new RedisLockProvider({ url: process.env.REDIS_URL, ...common })
    : new PostgresLockProvider({ connectionString: process.env.DATABASE_URL, lockPoolSize: 2, ...common });
const locks = new LockService(provider);
const releases = new Map<number, () => void>();

function caller(i: number): void {
  locks
    .run(key, (lock: Lock) => {
      send({ type: 'entered', i, token: lock.fencingToken.toString() });
      return new Promise<void>((resolve) => releases.set(i, resolve));
    })
    .then(
      () => send({ type: 'released', i }),
      (error: Error & { reason?: string }) =>
        send({ type: 'refused', i, name: error?.name, reason: error?.reason, message: error?.message }),
    );
}

process.on('message', (command: Command) => {
  if (command.type === 'callers') {
    for (let i = 0; i < (command.count as number); i++) caller(i);
  } else if (command.type === 'caller') {
    caller(command.i as number);
  } else if (command.type === 'release') {
    releases.get(command.i as number)?.();
    releases.delete(command.i as number);
  } else if (command.type === 'exit') {
    provider.close().finally(() => process.exit(0));
  }
});

process.on('disconnect', () => process.exit(0));

// Connected (scripts or sessions warmed) before the test starts.
locks
  .run(`warm-up-${process.pid}`, () => undefined)
  .then(
    () => send({ type: 'ready', pid: process.pid }),
    (error: unknown) => send({ type: 'failed', message: String((error as Error)?.stack ?? error) }),
  );
