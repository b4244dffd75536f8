import { LockProvider } from '../lock.provider';
import { SERIALIZED_DEFAULTS as D } from '../serialized.defaults';
import type { OptionSpec } from './option-spec.definition';
import { PROVIDER_TUNING_OPTIONS } from './provider-tuning.schema';

export * from './option-spec.definition';

const HOUR_MS = 3600_000;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * The one table of the library's options: for each, where it sits in the module
 * options, the environment variable, its type, bounds and default (from
 * `SERIALIZED_DEFAULTS`), the drivers it applies to, and what it accepts.
 * Environment parsing, module option validation, `@Serialized` option validation,
 * the per-call check of `LockService.run` and the providers, the README's options
 * table and .env.example (`scripts/options-docs.ts`) all come from here; nothing
 * else spells a limit out. Each provider's constructor takes the same option under
 * the last segment of its path (`redis.heartbeatMs` → `heartbeatMs`).
 */
export const SERIALIZED_OPTIONS_SCHEMA = {
  driver: {
    type: 'choice',
    option: 'driver',
    env: 'SERIALIZED_DRIVER',
    values: ['memory', 'redis', 'postgres', 'mysql'],
    default: D.driver,
    meaning: 'lock backend (ignored when `provider` is given)',
  },
  provider: {
    type: 'code',
    option: 'provider',
    format: 'a LockProvider instance, e.g. new RedisLockProvider({ … })',
    check: (value) => value instanceof LockProvider,
    meaning: 'a provider built in code; the module uses it as it is and never closes it',
  },
  redisUrl: {
    type: 'text',
    option: 'redis.url',
    env: 'REDIS_URL',
    drivers: ['redis'],
    pattern: /^rediss?:\/\/\S+$/,
    format: 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379',
    example: 'redis://127.0.0.1:6379',
    secret: true,
    meaning: 'Redis of the redis driver (unless redis.client is passed)',
  },
  redisClient: {
    type: 'code',
    option: 'redis.client',
    drivers: ['redis'],
    format: 'an ioredis Redis or Cluster client',
    check: (value) => isObject(value) && typeof value.duplicate === 'function',
    meaning: 'a client the app already has (standalone, Sentinel or Cluster); the library never closes it',
  },
  databaseUrl: {
    type: 'text',
    option: 'postgres.connectionString',
    env: 'DATABASE_URL',
    drivers: ['postgres'],
    pattern: /^postgres(ql)?:\/\/\S+$/,
    format: 'a postgres:// or postgresql:// URL, e.g. postgres://postgres@127.0.0.1:5432/postgres',
    example: 'postgres://postgres@127.0.0.1:5432/postgres',
    secret: true,
    meaning: 'PostgreSQL of the postgres driver (unless postgres.pool is passed)',
  },
  pgPool: {
    type: 'code',
    option: 'postgres.pool',
    drivers: ['postgres'],
    format: 'a pg Pool',
    check: (value) => isObject(value) && typeof value.connect === 'function' && typeof value.query === 'function',
    meaning: "a pool the app already has: its settings open the library's own lock pool; never ended by the library",
  },
  mysqlUrl: {
    type: 'text',
    option: 'mysql.url',
    env: 'MYSQL_URL',
    drivers: ['mysql'],
    pattern: /^mysql:\/\/\S+$/,
    format: 'a mysql:// URL, e.g. mysql://root@127.0.0.1:3306/test',
    example: 'mysql://root@127.0.0.1:3306/test',
    secret: true,
    meaning: 'MySQL or MariaDB of the mysql driver (unless mysql.pool is passed)',
  },
  mysqlPool: {
    type: 'code',
    option: 'mysql.pool',
    drivers: ['mysql'],
    format: 'a mysql2 pool (createPool, callback or promise API)',
    check: (value) => isObject(value) && typeof value.getConnection === 'function' && typeof value.query === 'function',
    meaning: "a pool the app already has: its settings open the library's own lock pool; never ended by the library",
  },
  keyPrefix: {
    type: 'text',
    option: 'keyPrefix',
    env: 'SERIALIZED_KEY_PREFIX',
    // No braces (they would break Redis Cluster hash tags) and no white space.
    pattern: /^[A-Za-z0-9_.:-]{1,64}$/,
    format: '1 to 64 characters of A-Z a-z 0-9 _ . : -',
    default: D.keyPrefix,
    meaning: 'namespace of every lock key',
  },
  leaseMs: {
    type: 'integer',
    option: 'leaseMs',
    env: 'SERIALIZED_LEASE_MS',
    unit: 'ms',
    default: D.leaseMs,
    min: 100,
    max: 24 * HOUR_MS,
    perCall: { min: 100 },
    meaning: 'lease, renewed every ~lease/3 while held (Redis); liveness cadence (PostgreSQL); none in memory: docs/lease.md',
  },
  waitTimeoutMs: {
    type: 'integer',
    option: 'waitTimeoutMs',
    env: 'SERIALIZED_WAIT_TIMEOUT_MS',
    unit: 'ms',
    default: D.waitTimeoutMs,
    min: 0,
    max: 24 * HOUR_MS,
    perCall: { min: 0 },
    meaning: "longest wait in 'wait' mode",
  },
  maxPending: {
    type: 'integer',
    option: 'maxPending',
    env: 'SERIALIZED_MAX_PENDING',
    unit: 'count',
    default: D.maxPending,
    min: 0,
    max: 10_000_000,
    perCall: { min: 0, infinity: true },
    meaning: 'waiters per key and process',
  },
  maxPendingTotal: {
    type: 'integer',
    option: 'maxPendingTotal',
    env: 'SERIALIZED_MAX_PENDING_TOTAL',
    unit: 'count',
    default: D.maxPendingTotal,
    min: 0,
    max: 10_000_000,
    meaning: 'waiters across all keys, per process (provider instance): docs/memory.md',
  },
  connectTimeoutMs: {
    type: 'integer',
    option: 'connectTimeoutMs',
    env: 'SERIALIZED_CONNECT_TIMEOUT_MS',
    unit: 'ms',
    default: D.connectTimeoutMs,
    min: 100,
    max: 600_000,
    meaning: 'bound on reaching the backend before 503',
  },
  shutdownGraceMs: {
    type: 'integer',
    option: 'shutdownGraceMs',
    env: 'SERIALIZED_SHUTDOWN_GRACE_MS',
    unit: 'ms',
    default: D.shutdownGraceMs,
    min: 0,
    max: HOUR_MS,
    meaning: 'how long app.close() waits for running handlers',
  },
  reentrant: {
    type: 'boolean',
    option: 'reentrant',
    env: 'SERIALIZED_REENTRANT',
    default: D.reentrant,
    meaning: 'a call whose async context holds its key joins that holder (false: it queues)',
  },
  metrics: {
    type: 'choice',
    option: 'metrics',
    env: 'SERIALIZED_METRICS',
    values: ['auto', 'on', 'off'],
    default: D.metrics,
    meaning:
      "OpenTelemetry metrics: 'auto' when @opentelemetry/api is installed; 'on' stops start-up without it; 'off' records none: docs/observability.md",
  },
  tracing: {
    type: 'choice',
    option: 'tracing',
    env: 'SERIALIZED_TRACING',
    values: ['auto', 'on', 'off'],
    default: D.tracing,
    meaning:
      "OpenTelemetry spans serialized.wait / serialized.hold: 'auto' when @opentelemetry/api is installed and a TracerProvider registered; 'on' stops start-up without the API; 'off' records none: docs/observability.md",
  },
  // Provider tuning, reachable through the module as `redis: { … }` / `postgres: { … }`.
  ...PROVIDER_TUNING_OPTIONS,
  errorMapping: {
    type: 'code',
    option: 'errorMapping',
    format: 'true (default), false, or { body?: (error, status, defaultBody) => body }',
    defaultText: 'true',
    check: (value) => typeof value === 'boolean' || (isObject(value) && ['undefined', 'function'].includes(typeof value.body)),
    meaning:
      'how lock errors escaping a handler are answered (400 / 429 / 503 on every transport); false leaves them to your filters: docs/errors.md',
  },
  transactionQuery: {
    type: 'code',
    option: 'transaction.query',
    format: '(tx, sql, params) => Promise<rows>',
    check: (value) => typeof value === 'function',
    meaning:
      "transaction mode (`@Serialized(key, { transaction: true })`, any driver): sends a statement through the app's transaction for an adapter not recognised (TypeORM, Prisma, Drizzle, Kysely, Knex, pg-promise, pg are); needs @nestjs-cls/transactional and nestjs-cls: docs/transactions.md",
  },
  idempotencyTtlMs: {
    type: 'integer',
    env: 'SERIALIZED_IDEMPOTENCY_TTL_MS',
    unit: 'ms',
    default: D.idempotencyTtlMs,
    min: 100,
    max: 365 * 24 * HOUR_MS,
    meaning: 'how long `@Idempotent` replays a stored response (24 h), unless it sets `ttlMs`',
  },
} as const satisfies Record<string, OptionSpec>;

export type SerializedOptionName = keyof typeof SERIALIZED_OPTIONS_SCHEMA;

type EnvOf<T> = T extends { env: infer E extends string } ? E : never;
/** The environment variables the library reads. */
export type SerializedEnvName = EnvOf<(typeof SERIALIZED_OPTIONS_SCHEMA)[SerializedOptionName]>;

/** Options that may also be given per call (`@Serialized`, `LockService.run`, a provider's `acquire`). */
export type PerCallOptionName = 'leaseMs' | 'waitTimeoutMs' | 'maxPending';

/**
 * `concurrency`, given per call only (a key's limit travels with its callers):
 * most holders of one key at once, default 1 (one at a time).
 */
export const CONCURRENCY_OPTION = { default: 1, min: 1, max: 1000 } as const;

/** The rows of the table, in order. */
export const SERIALIZED_OPTION_SPECS: readonly (readonly [SerializedOptionName, OptionSpec])[] = Object.entries(
  SERIALIZED_OPTIONS_SCHEMA,
) as never;
