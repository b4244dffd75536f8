import type { RedisLockProvider } from 'nestjs-serialized';
import { waitFor } from '../../support/timing';

/** The provider's wake-up subscription, read through its internals (no public diagnostic says it). */
function hears(provider: RedisLockProvider): boolean {
  return (provider as unknown as { backend: { wakeUps: { listening: boolean } } }).backend.wakeUps.listening;
}

/**
 * Makes `provider` hear its wake-up channel: it subscribes once one of its callers has
 * waited, and riders need it (another process's notice comes that way). Waits once on
 * `key`, then until Redis confirmed the subscription (a suite that starts at once
 * would otherwise race it).
 */
export async function listening(provider: RedisLockProvider, key: string): Promise<void> {
  const holder = await provider.acquire(key);
  const waiter = provider.acquire(key, { waitTimeoutMs: 10_000 });
  await provider.ping(5000);
  await holder.release();
  await (await waiter).release();
  await waitFor(() => hears(provider), 10_000, 'the provider listens on its wake-up channel');
}
