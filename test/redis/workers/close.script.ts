/**
 * Uses a provider outside Nest, as a plain script would, with nothing else keeping
 * the event loop alive (no IPC channel, no timer of its own), and prints what it
 * got to. Run with stdout piped, never with an IPC channel (that would keep the
 * process alive and hide the problem).
 * It acquires, releases (with a hand-off, so that the wake-up connection is open
 * too), then `await provider.close()` and prints "closed".
 * Env: REDIS_URL, KEY_PREFIX.
 */
// Deep import: a script that loads only what it uses starts in half the time.
import { RedisLockProvider } from 'nestjs-serialized/providers/redis/redis-lock.provider';

async function main(): Promise<void> {
  const provider = new RedisLockProvider({ url: process.env.REDIS_URL, keyPrefix: process.env.KEY_PREFIX });
  const first = await provider.acquire('close:a');
  const second = provider.acquire('close:a');
  await first.release();
  await (await second).release();
  await provider.close();
  process.stdout.write('closed\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`failed: ${String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
