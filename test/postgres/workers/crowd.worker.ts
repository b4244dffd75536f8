/**
 * Many concurrent callers in one process with a small lock pool: HOT_WAITERS on
 * one key, plus OTHER_KEYS keys with OTHER_WAITERS callers each (so every lock
 * connection is busy and callers must queue for one).
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME, POOL_SIZE, HOT_KEY, HOT_WAITERS, OTHER_KEYS, OTHER_WAITERS.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { LockService } from 'nestjs-serialized/lock.service';
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';

async function main(): Promise<void> {
  const provider = new PostgresLockProvider({
    connectionString: process.env.DATABASE_URL,
    keyPrefix: process.env.KEY_PREFIX,
    applicationName: process.env.APP_NAME,
    lockPoolSize: Number(process.env.POOL_SIZE),
    waitTimeoutMs: 120_000,
  });
  const locks = new LockService(provider);
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  const inside = new Map<string, number>();
  let maxInside = 0;
  let completed = 0;
  const failures: string[] = [];
  const section = (key: string, holdMs: number) =>
    locks
      .run(key, async () => {
        const now = (inside.get(key) ?? 0) + 1;
        inside.set(key, now);
        maxInside = Math.max(maxInside, now);
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        inside.set(key, now - 1);
        completed++;
      })
      .catch((error) => void failures.push(String(error?.message ?? error)));

  const runs: Promise<void>[] = [];
  for (let i = 0; i < Number(process.env.HOT_WAITERS); i++) runs.push(section(process.env.HOT_KEY!, 0));
  for (let k = 0; k < Number(process.env.OTHER_KEYS); k++) {
    for (let i = 0; i < Number(process.env.OTHER_WAITERS); i++) runs.push(section(`other-${k}`, 3));
  }
  process.send!({ type: 'started' });
  await Promise.all(runs);
  process.send!({
    type: 'done',
    completed,
    failures: failures.slice(0, 5),
    failed: failures.length,
    maxInside,
    connections: provider.connections,
  });
  await provider.close();
  process.disconnect();
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
