import type { Redis } from 'ioredis';

/** Deletes every key starting with `prefix` (a test's own namespace), scanning rather than KEYS. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}
