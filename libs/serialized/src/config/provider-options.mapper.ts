import type { LockProviderCommonOptions } from '../lock-provider-options.interface';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';
import { fromValidatedModuleOptions } from './provider-options.validator';

/** The options every provider takes, from the resolved module options. */
export function commonProviderOptions(options: ResolvedSerializedOptions): Required<LockProviderCommonOptions> {
  const { keyPrefix, leaseMs, waitTimeoutMs, maxPending, maxPendingTotal, connectTimeoutMs, shutdownGraceMs } = options;
  return { keyPrefix, leaseMs, waitTimeoutMs, maxPending, maxPendingTotal, connectTimeoutMs, shutdownGraceMs };
}

/** `new InMemoryLockProvider(…)`'s options from the module's: the common ones. */
export function memoryProviderOptions(options: ResolvedSerializedOptions) {
  return fromValidatedModuleOptions(commonProviderOptions(options));
}

/**
 * `new RedisLockProvider(…)`'s flat options from the module's (`redis.heartbeatMs` → `heartbeatMs`).
 * These and the two below are marked as validated: the module checked them once, the provider does not again.
 */
export function redisProviderOptions(options: ResolvedSerializedOptions) {
  return fromValidatedModuleOptions({ ...commonProviderOptions(options), ...options.redis });
}

/** `new PostgresLockProvider(…)`'s flat options from the module's (`postgres.lockPoolSize` → `lockPoolSize`). */
export function postgresProviderOptions(options: ResolvedSerializedOptions) {
  return fromValidatedModuleOptions({ ...commonProviderOptions(options), ...options.postgres });
}

/** `new MysqlLockProvider(…)`'s flat options from the module's (`mysql.url` → `url`). */
export function mysqlProviderOptions(options: ResolvedSerializedOptions) {
  return fromValidatedModuleOptions({ ...commonProviderOptions(options), ...options.mysql });
}
