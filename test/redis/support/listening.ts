import type { RedisLockProvider } from 'nestjs-serialized';

/**
 * Makes `provider` hear its wake-up channel: it subscribes once one of its callers has
 * waited, and riders need it (another process's notice comes that way). Waits once on `key`.
 */
export async function listening(provider: RedisLockProvider, key: string): Promise<void> {
  const holder = await provider.acquire(key);
  const waiter = provider.acquire(key, { waitTimeoutMs: 10_000 });
  await provider.ping(5000);
  await holder.release();
  await (await waiter).release();
}
