// PLACEHOLDER — replaced by the Redis provider work (issue 3).
import type { Cluster, Redis } from 'ioredis';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import type { ProviderAcquireOptions } from '../../acquire-options.interface';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';

export interface RedisLockProviderOptions {
  url?: string;
  client?: Redis | Cluster;
  keyPrefix?: string;
  leaseMs?: number;
  waitTimeoutMs?: number;
  maxPending?: number;
  connectTimeoutMs?: number;
  shutdownGraceMs?: number;
}

export class RedisLockProvider extends LockProvider {
  constructor(readonly options: RedisLockProviderOptions) {
    super();
  }
  static fromModuleOptions(options: ResolvedSerializedOptions): RedisLockProvider {
    return new RedisLockProvider({ ...options, ...options.redis });
  }
  acquire(_key: string, _options?: ProviderAcquireOptions): Promise<Lock> {
    throw new Error('not implemented');
  }
  tryAcquire(_key: string, _options?: ProviderAcquireOptions): Promise<Lock | null> {
    throw new Error('not implemented');
  }
  async close(): Promise<void> {}
}
