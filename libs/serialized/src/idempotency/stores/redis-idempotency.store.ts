import type { Cluster, Redis } from 'ioredis';
import type { IdempotencyStore } from '../idempotency.store';
import { decodeStoredResponse, encodeStoredResponse, type StoredResponse } from '../stored-response.codec';

/** What the Redis provider lends its store: its command connection and its key names. */
export interface RedisIdempotencyBackend {
  /**
   * Sends a command for the lock key `key` on the provider's command connection:
   * ready-checked, bounded by `connectTimeoutMs`, failing with `LockBackendError`.
   */
  run<T>(key: string, send: (client: Redis | Cluster) => Promise<T>): Promise<T>;
  /** The Redis key of `key`'s record: under the provider's `keyPrefix`, in the `{hash tag}` of the key's lock. */
  recordKeyOf(key: string): string;
}

/**
 * Records in Redis, one string per key (`<prefix>:{<lock key>}:idem`, in the same
 * Cluster slot as the key's lock), expiring by Redis's own TTL (`SET ... PX`):
 * nothing to sweep.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(private readonly backend: RedisIdempotencyBackend) {}

  async get(key: string): Promise<StoredResponse | undefined> {
    const text = await this.backend.run(key, (client) => client.get(this.backend.recordKeyOf(key)));
    return text === null ? undefined : decodeStoredResponse(text);
  }

  async set(key: string, record: StoredResponse, ttlMs: number): Promise<void> {
    const text = encodeStoredResponse(record);
    await this.backend.run(key, (client) => client.set(this.backend.recordKeyOf(key), text, 'PX', ttlMs));
  }

  async close(): Promise<void> {
    // The connection is the provider's: it closes it.
  }
}
