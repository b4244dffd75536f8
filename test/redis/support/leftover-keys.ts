import type { Redis } from 'ioredis';
import type { RedisLockProvider } from 'nestjs-serialized';

/**
 * Redis keys still under the provider's prefix, but for its fencing counter(s):
 * every lock, queue and heart-beat key must be gone once nobody holds or waits.
 * `client` is one server (a Cluster's caller asks each master node).
 */
export async function leftoverKeys(client: Redis, provider: RedisLockProvider, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found.filter((key) => !provider.isFencingCounter(key));
}
