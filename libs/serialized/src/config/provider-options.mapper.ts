import type { LockProviderCommonOptions } from '../lock-provider-options.interface';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';

/** The options every provider takes, from the resolved module options. */
export function commonProviderOptions(options: ResolvedSerializedOptions): Required<LockProviderCommonOptions> {
  const { keyPrefix, leaseMs, waitTimeoutMs, maxPending, maxPendingTotal, connectTimeoutMs, shutdownGraceMs } = options;
  return { keyPrefix, leaseMs, waitTimeoutMs, maxPending, maxPendingTotal, connectTimeoutMs, shutdownGraceMs };
}

/** `new RedisLockProvider(…)`'s flat options from the module's (`redis.heartbeatMs` → `heartbeatMs`). */
export function redisProviderOptions(options: ResolvedSerializedOptions) {
  return { ...commonProviderOptions(options), ...options.redis };
}

/** `new PostgresLockProvider(…)`'s flat options from the module's (`postgres.lockPoolSize` → `lockPoolSize`). */
export function postgresProviderOptions(options: ResolvedSerializedOptions) {
  return { ...commonProviderOptions(options), ...options.postgres };
}

/** `new MysqlLockProvider(…)`'s flat options from the module's (`mysql.url` → `url`). */
export function mysqlProviderOptions(options: ResolvedSerializedOptions) {
  return { ...commonProviderOptions(options), ...options.mysql };
}
