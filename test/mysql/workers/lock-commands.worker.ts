/**
 * One app instance's MysqlLockProvider in a process of its own, driven by the test
 * over IPC: a holder of a key, a caller waiting in the server for it, or another
 * instance trying keys. Every report carries `at` (Date.now()).
 * Env: MYSQL_URL, KEY_PREFIX.
 *
 * Commands:
 * - {type:'hold', key}: acquires `key`, reports `held` (fencing token, the named lock's name).
 * - {type:'release', key}: releases it, reports `released`.
 * - {type:'take', key, waitTimeoutMs}: waits for `key`, reports `took` (token), releases.
 * - {type:'try', keys}: `tryAcquire` of each key, one at a time (each released at once),
 *   reports `tried` with `free: boolean[]` in the order of `keys`.
 * Any unexpected error is reported as `failed`.
 */
import type { Lock } from 'nestjs-serialized';
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { MysqlLockProvider } from 'nestjs-serialized/providers/mysql/mysql-lock.provider';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.({ ...message, at: Date.now() });
};
const fail = (error: unknown): void =>
  send({ type: 'failed', name: (error as Error)?.name, message: String((error as Error)?.stack ?? error) });

const provider = new MysqlLockProvider({ url: process.env.MYSQL_URL, keyPrefix: process.env.KEY_PREFIX, lockPoolSize: 4 });
const held = new Map<string, Lock>();

async function hold(key: string): Promise<void> {
  const lock = await provider.acquire(key);
  held.set(key, lock);
  send({ type: 'held', key, token: lock.fencingToken.toString(), name: provider.lockNameOf(key) });
}

async function release(key: string): Promise<void> {
  await held.get(key)!.release();
  held.delete(key);
  send({ type: 'released', key });
}

async function take(key: string, waitTimeoutMs: number): Promise<void> {
  const lock = await provider.acquire(key, { waitTimeoutMs });
  send({ type: 'took', key, token: lock.fencingToken.toString() });
  await lock.release();
}

async function tryKeys(keys: string[]): Promise<void> {
  const free: boolean[] = [];
  for (const key of keys) {
    const lock = await provider.tryAcquire(key);
    free.push(lock !== null);
    await lock?.release();
  }
  send({ type: 'tried', keys, free });
}

process.on('message', (command: Command) => {
  switch (command.type) {
    case 'hold':
      hold(command.key as string).catch(fail);
      break;
    case 'release':
      release(command.key as string).catch(fail);
      break;
    case 'take':
      take(command.key as string, command.waitTimeoutMs as number).catch(fail);
      break;
    case 'try':
      tryKeys(command.keys as string[]).catch(fail);
      break;
  }
});

process.on('disconnect', () => process.exit(0));

// Connected (a session opened, the fencing table there) before the test starts.
provider
  .acquire(`warm-up-${process.pid}`)
  .then((lock) => lock.release())
  .then(() => send({ type: 'ready', pid: process.pid }), fail);
