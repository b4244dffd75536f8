/**
 * Holds one key and reports what happens to it: `held` (with its fencing token and
 * the named lock's name), `lost` when lock.signal aborts, then `reacquired` once the
 * same provider got the key again on a fresh session (the pool recovers without a
 * restart), and `closed`.
 * Env: MYSQL_URL, KEY_PREFIX, KEY.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { MysqlLockProvider } from 'nestjs-serialized/providers/mysql/mysql-lock.provider';

async function main(): Promise<void> {
  const key = process.env.KEY!;
  const provider = new MysqlLockProvider({ url: process.env.MYSQL_URL, keyPrefix: process.env.KEY_PREFIX, lockPoolSize: 2 });
  const lock = await provider.acquire(key);
  lock.signal.addEventListener('abort', () => {
    const reason = lock.signal.reason as Error;
    process.send!({ type: 'lost', name: reason?.name, message: reason?.message, at: Date.now() });
    void (async () => {
      await lock.release();
      const again = await provider.acquire(key, { waitTimeoutMs: 20_000 });
      process.send!({ type: 'reacquired', token: again.fencingToken.toString(), at: Date.now() });
      await again.release();
      await provider.close();
      process.send!({ type: 'closed' });
    })().catch((error) => process.send!({ type: 'failed', message: String(error?.stack ?? error) }));
  });
  process.send!({ type: 'held', token: lock.fencingToken.toString(), name: provider.lockNameOf(key) });
  setInterval(() => undefined, 60_000); // stay alive holding the key until killed
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
