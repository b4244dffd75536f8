// PLACEHOLDER — replaced by the PostgreSQL provider work (issue 4).
import type { Pool } from 'pg';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import type { ProviderAcquireOptions } from '../../acquire-options.interface';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';

export interface PostgresLockProviderOptions {
  connectionString?: string;
  pool?: Pool;
  lockPoolSize?: number;
  keyPrefix?: string;
  leaseMs?: number;
  waitTimeoutMs?: number;
  maxPending?: number;
  connectTimeoutMs?: number;
  shutdownGraceMs?: number;
}

export class PostgresLockProvider extends LockProvider {
  constructor(readonly options: PostgresLockProviderOptions) {
    super();
  }
  static fromModuleOptions(options: ResolvedSerializedOptions): PostgresLockProvider {
    return new PostgresLockProvider({ ...options, ...options.postgres });
  }
  acquire(_key: string, _options?: ProviderAcquireOptions): Promise<Lock> {
    throw new Error('not implemented');
  }
  tryAcquire(_key: string, _options?: ProviderAcquireOptions): Promise<Lock | null> {
    throw new Error('not implemented');
  }
  async close(): Promise<void> {}
}
