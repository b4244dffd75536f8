/**
 * One app instance's RedisLockProvider in a process of its own, driven by the test
 * over IPC. Every report carries `at` (Date.now()), so the test can order events
 * across processes. It reports its connection's ups and downs as `status`
 * (`reconnecting`, `ready`, `end`).
 * Env: REDIS_URL, KEY_PREFIX, LEASE_MS, KEY.
 *
 * Commands:
 * - {type:'hold'}: runs a section on KEY: reports `held` (fencing token, owner token,
 *   the lock's Redis key); the section runs until lock.signal aborts, then reports
 *   `aborted` (reason name and message), stops its work (`section-ended`) and
 *   releases, reporting `released`.
 * - {type:'take', waitTimeoutMs}: waits for KEY, reports `took` (fencing and owner
 *   tokens) and keeps it until {type:'release'}, which reports `released`.
 * Any unexpected error is reported as `failed`.
 */
import type { Lock } from 'nestjs-serialized';
// Deep import: a worker that loads only what it uses starts in half the time.
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

type Command = { type: string; [field: string]: unknown };

const send = (message: Command): void => {
  process.send?.({ ...message, at: Date.now() });
};
const fail = (error: unknown): void =>
  send({ type: 'failed', name: (error as Error)?.name, message: String((error as Error)?.stack ?? error) });

const key = process.env.KEY!;
const provider = new RedisLockProvider({
  url: process.env.REDIS_URL,
  keyPrefix: process.env.KEY_PREFIX!,
  leaseMs: Number(process.env.LEASE_MS),
});
const ownerToken = (lock: Lock): string | undefined => (lock as { token?: string }).token;
let taken: Lock | undefined;

async function hold(): Promise<void> {
  const lock = await provider.acquire(key);
  send({ type: 'held', token: lock.fencingToken.toString(), owner: ownerToken(lock), redisKey: provider.redisKeysOf(key).lock });
  // The section's work goes on until it is told it no longer holds the key.
  await new Promise<void>((resolve) => {
    lock.signal.addEventListener('abort', () => {
      const reason = lock.signal.reason as Error;
      send({ type: 'aborted', name: reason?.name, message: reason?.message });
      resolve();
    });
  });
  send({ type: 'section-ended' });
  await lock.release();
  send({ type: 'released' });
}

async function take(waitTimeoutMs: number): Promise<void> {
  taken = await provider.acquire(key, { waitTimeoutMs });
  send({ type: 'took', token: taken.fencingToken.toString(), owner: ownerToken(taken) });
}

process.on('message', (command: Command) => {
  switch (command.type) {
    case 'hold':
      hold().catch(fail);
      break;
    case 'take':
      take(command.waitTimeoutMs as number).catch(fail);
      break;
    case 'release':
      taken!.release().then(() => send({ type: 'released' }), fail);
      break;
    case 'exit':
      provider.close().finally(() => process.exit(0));
      break;
  }
});

process.on('disconnect', () => process.exit(0));

for (const status of ['reconnecting', 'ready', 'end'] as const) {
  provider.client.on(status, () => send({ type: 'status', status }));
}

// Connected and scripts loaded before the test starts its clock.
provider
  .tryAcquire(`warm-up-${process.pid}`)
  .then((lock) => lock?.release())
  .then(() => send({ type: 'ready', pid: process.pid }), fail);
