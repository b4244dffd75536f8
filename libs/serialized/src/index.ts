/**
 * nestjs-serialized — the public API, one section per thing a user does.
 * Anything not exported here is internal and may change in any release
 * (the package's `exports` map keeps deep imports out). Test helpers live in
 * `nestjs-serialized/testing`.
 */

// Set-up: the global module; `forRoot()` reads the environment, options in code win.
export { SerializedModule } from './serialized.module';
export type { SerializedModuleOptions, SerializedDriver } from './serialized-options.interface';
// The clients `redis.client`, `postgres.pool` and `mysql.pool` take, by shape (no ioredis, pg or mysql2 typings needed).
export type { RedisClientLike, PgPoolLike, MysqlPoolLike } from './peer-clients.interface';

// Serializing a handler, a service method or a BullMQ `process(job)`: `@Serialized(key, options?)`.
export { Serialized } from './decorators/serialized.decorator';
// `@SkipSerialized()` exempts a method from a class-level `@Serialized`; `@SerializedLock()` hands a handler its lock.
export { SkipSerialized } from './decorators/skip-serialized.decorator';
export { SerializedLock } from './decorators/serialized-lock.decorator';
export type { SerializedOptions } from './metadata/serialized-options.interface';
export type {
  SerializationKey,
  SerializationKeyFn,
  SerializationKeyValue,
  SerializationKeysFn,
  SerializedKey,
} from './key/serialization-key.parser';
// What @Serialized applies; public for apps that register it as APP_INTERCEPTOR.
export { SerializedInterceptor } from './interceptors/serialized.interceptor';

// Serializing code by hand: `lockService.run(key, async (lock) => …, options?)`.
export { LockService } from './lock.service';
export type { RunOptions, SerializedMode, LockSet, LockServiceSettings } from './lock.service';
// Who holds a key, since when, how many wait: `lockService.inspect(key)` (docs/observability.md).
export type { LockInfo, LockHolderInfo } from './inspect/lock-info.interface';
// Health: a @nestjs/terminus indicator for the active backend (terminus is loaded on the first check).
export { SerializedHealthIndicator } from './observability/serialized-health.indicator';
export type { SerializedHealthResult, SerializedHealthCheckOptions } from './observability/serialized-health.indicator';
export type { Lock } from './lock.interface';
export type { AcquireOptions, HandOffMode } from './acquire-options.interface';

// Backends: `LockProvider` is the DI token of the active one; construct one yourself to pass it in.
export { LockProvider } from './lock.provider';
export type { LockProviderCommonOptions } from './lock-provider-options.interface';
export { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';
export type { InMemoryLockProviderOptions } from './providers/memory/in-memory-lock.provider';
export { RedisLockProvider } from './providers/redis/redis-lock.provider';
export type { RedisLockProviderOptions, RedisReplicaAcks } from './providers/redis/redis-lock.provider';
export { PostgresLockProvider } from './providers/postgres/postgres-lock.provider';
export type { PostgresLockProviderOptions } from './providers/postgres/postgres-lock.provider';
export { MysqlLockProvider } from './providers/mysql/mysql-lock.provider';
export type { MysqlLockProviderOptions } from './providers/mysql/mysql-lock.provider';

// Errors: transport-neutral; a request gets 400 / 429 / 503 (README, "Options and errors").
export { SerializedError } from './errors/serialized.error';
export { SerializationKeyError } from './errors/serialization-key.error';
export type { SerializationKeyProblem } from './errors/serialization-key.error';
export { LockBusyError } from './errors/lock-busy.error';
export type { LockBusyReason } from './errors/lock-busy.error';
export { LockTimeoutError } from './errors/lock-timeout.error';
export { LockLostError } from './errors/lock-lost.error';
export { LockBackendError } from './errors/lock-backend.error';
// Answers them in each transport's form (global; `errorMapping` changes the body or turns it off).
export { SerializedExceptionFilter } from './filters/serialized-exception.filter';
export type { ErrorMappingOptions } from './interceptors/serialized-error.mapper';
// A bad option or environment variable at start-up.
export { SerializedConfigError } from './config/serialized-config.error';

// BullMQ: jobs of one key run one at a time, in enqueue order, without blocking worker slots.
export { SerializedJobs } from './bullmq/serialized-jobs.decorator';
export type { SerializedJobsOptions } from './bullmq/serialized-jobs-options.interface';

// Idempotency: a retried request gets the first one's stored response (`Idempotency-Key`).
export { Idempotent } from './idempotency/idempotent.decorator';
export type { IdempotentOptions, IdempotencyFingerprintFn } from './idempotency/idempotent-options.interface';
export { IdempotencyKeyError, IdempotencyConflictError, IdempotencyMismatchError } from './idempotency/errors';
export type { IdempotencyKeyProblem } from './idempotency/errors';
export type { IdempotencyStore, IdempotencyStoreSource } from './idempotency/idempotency.store';
export type { StoredResponse } from './idempotency/stored-response.codec';
export type { ProblemDetails } from './idempotency/idempotency-problem.mapper';

// Scheduled methods: each tick of a @nestjs/schedule job runs on one instance (docs/scheduling.md).
export { OncePerTick } from './schedule/once-per-tick.decorator';
export type { OncePerTickOptions } from './metadata/once-per-tick-options.interface';

// Transaction mode: the lock inside the app's own database transaction (docs/transactions.md).
export type { TransactionOption, TransactionQuery, TransactionModuleOptions } from './transaction/transaction-options.interface';
export { TransactionIsolationError } from './transaction/transaction-isolation.error';
