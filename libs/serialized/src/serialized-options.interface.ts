import type { HandOffMode } from './acquire-options.interface';
import type { ErrorMappingOptions } from './interceptors/serialized-error.mapper';
import type { LockProviderCommonOptions } from './lock-provider-options.interface';
import type { LockProvider } from './lock.provider';
import type { TransactionModuleOptions } from './transaction/transaction-options.interface';
import type { MysqlPoolLike, PgPoolLike, RedisClientLike } from './peer-clients.interface';
import type { RedisReplicaAcks } from './providers/redis/redis-lock-provider.options';

/** Which backend holds the locks. */
export type SerializedDriver = 'memory' | 'redis' | 'postgres' | 'mysql';

/**
 * Options of `SerializedModule.forRoot()`. Every field is optional; each one, its
 * variable, bounds and default are in the options table (README, "Configuration").
 * Besides the backend, they carry what every provider takes (`keyPrefix`, `leaseMs`,
 * `waitTimeoutMs`, `maxPending`, `maxPendingTotal`, `connectTimeoutMs`, `shutdownGraceMs`).
 */
export interface SerializedModuleOptions extends LockProviderCommonOptions {
  /** Backend (default: `SERIALIZED_DRIVER`, else `'memory'`). */
  driver?: SerializedDriver;
  /**
   * A provider built in code (`new RedisLockProvider({ … })`), used as it is: the
   * other options and the environment do not change it, and the module never shuts
   * it down or closes its connections: whoever made it calls `close()` (so one
   * provider may serve several apps in a process). Like throttler's `storage`.
   */
  provider?: LockProvider;
  /**
   * Default of `@Serialized`'s and `LockService.run`'s `reentrant` (default: `SERIALIZED_REENTRANT`,
   * else `true`). `false`: no call joins an enclosing holder of its key; each queues like anyone else.
   */
  reentrant?: boolean;
  /**
   * OpenTelemetry metrics (default: `SERIALIZED_METRICS`, else `'auto'`): `'auto'` records
   * them when `@opentelemetry/api` is installed (and a MeterProvider registered); `'on'`
   * stops start-up with a `SerializedConfigError` when it is not installed; `'off'`
   * records none (docs/observability.md).
   */
  metrics?: 'auto' | 'on' | 'off';
  /**
   * OpenTelemetry traces (default: `SERIALIZED_TRACING`, else `'auto'`): a `serialized.wait`
   * span for a call that waited or was refused and a `serialized.hold` span for one that
   * held, children of the active span. `'auto'` records them when `@opentelemetry/api` is
   * installed and a TracerProvider is registered before the app is created; `'on'` records
   * through the global TracerProvider whenever it is registered, and stops start-up with a
   * `SerializedConfigError` when the API is not installed; `'off'` records none, at no cost
   * (docs/observability.md).
   */
  tracing?: 'auto' | 'on' | 'off';
  redis?: {
    /** `redis://` / `rediss://` URL (default: `REDIS_URL`). The library opens and closes its connections. */
    url?: string;
    /** A client the app already has (standalone, Sentinel or Cluster). The library never closes it. */
    client?: RedisClientLike;
    /** How long a waiter keeps its place in the Redis queue without a heart-beat (default 5000 ms, `SERIALIZED_REDIS_HEARTBEAT_MS`). */
    heartbeatMs?: number;
    /** Commands on the wire at once per connection (default 1000, `SERIALIZED_REDIS_MAX_IN_FLIGHT`). */
    maxInFlight?: number;
    /**
     * How a released key passes to a waiter of the same process, without a round trip
     * (default `'strict'`, `SERIALIZED_REDIS_HANDOFF`): `'strict'` only while global arrival
     * order allows it; `'cohort'` this process's waiters first, up to `maxLocalHandOffs`
     * in a row (docs/semantics.md, *Local hand-off*).
     */
    handoff?: HandOffMode;
    /** Most local hand-offs in a row before the key goes back to Redis (default 16, `SERIALIZED_REDIS_MAX_LOCAL_HANDOFFS`; 0: none). */
    maxLocalHandOffs?: number;
    /**
     * A grant (with its fencing tokens) or renewal counts only once `acks` replicas
     * have it (Redis `WAIT`, at most `timeoutMs`); otherwise the lock is undone and the
     * caller gets `LockBackendError`. Default none (`SERIALIZED_REDIS_REPLICA_ACKS`,
     * `SERIALIZED_REDIS_REPLICA_TIMEOUT_MS`): docs/providers/redis.md, *Fail-over*.
     */
    replicas?: RedisReplicaAcks;
  };
  /**
   * How library errors that escape a request handler are answered (docs/errors.md):
   * on (default: 400 / 429 / 503 in each transport's form), `{ body }` to change
   * what the client receives, or `false` to leave them to the app's own filters.
   */
  errorMapping?: boolean | ErrorMappingOptions;
  /**
   * Transaction mode (`@Serialized(key, { transaction: true })`, docs/transactions.md), whatever
   * `driver` is: `query` sends a statement through an adapter the library does not recognise.
   */
  transaction?: TransactionModuleOptions;
  postgres?: {
    /** `postgres://` URL (default: `DATABASE_URL`). */
    connectionString?: string;
    /**
     * A `pg` Pool the app already has. Its connection settings are reused for a
     * small lock pool of the library's own: lock sessions never take the app's
     * work connections. The library never ends this pool.
     */
    pool?: PgPoolLike;
    /** Connections of the library's lock pool per process (default 10, `SERIALIZED_PG_LOCK_POOL_SIZE`). */
    lockPoolSize?: number;
    /** A lock session silent this long counts as lost (default 10 000 ms, `SERIALIZED_PG_SESSION_TIMEOUT_MS`). */
    sessionTimeoutMs?: number;
    /** Idle lock sessions are closed after this long (default 10 000 ms, `SERIALIZED_PG_IDLE_TIMEOUT_MS`). */
    idleTimeoutMs?: number;
    /** `application_name` of the lock sessions (default `nestjs-serialized:<keyPrefix>`). */
    applicationName?: string;
    /** Sequence fencing tokens are drawn from (default `nestjs_serialized_fencing_token`). */
    fencingSequence?: string;
    /**
     * Create the fencing sequence and `@Idempotent`'s table when missing (default
     * true). Off for a role that may not run DDL: docs/providers/postgres.md has the SQL.
     */
    createSchema?: boolean;
    /**
     * How a released key passes to a caller of the same process, without a round trip
     * (default `'strict'`, `SERIALIZED_PG_HANDOFF`): `'strict'` only while no other process
     * waits for it in the server; `'cohort'` this process's callers first, up to
     * `maxLocalHandOffs` in a row (docs/providers/postgres.md).
     */
    handoff?: HandOffMode;
    /** Local hand-offs in a row before the key goes back to the server (default 32, `SERIALIZED_PG_MAX_LOCAL_HANDOFFS`). */
    maxLocalHandOffs?: number;
  };
  mysql?: {
    /** `mysql://user:password@host:3306/database` URL of a MySQL or MariaDB server (default: `MYSQL_URL`). */
    url?: string;
    /**
     * A mysql2 pool the app already has. Its connection settings are reused for a
     * small lock pool of the library's own: lock sessions never take the app's work
     * connections. The library never ends this pool.
     */
    pool?: MysqlPoolLike;
  };
}

/** The options with every default applied and every value validated. */
export interface ResolvedSerializedOptions extends Required<LockProviderCommonOptions> {
  driver: SerializedDriver;
  provider?: LockProvider;
  redis: {
    url?: string;
    client?: RedisClientLike;
    heartbeatMs: number;
    maxInFlight: number;
    handoff: HandOffMode;
    maxLocalHandOffs: number;
    replicas?: RedisReplicaAcks;
  };
  postgres: {
    connectionString?: string;
    pool?: PgPoolLike;
    lockPoolSize: number;
    sessionTimeoutMs: number;
    idleTimeoutMs: number;
    applicationName?: string;
    fencingSequence: string;
    createSchema: boolean;
    handoff: HandOffMode;
    maxLocalHandOffs: number;
  };
  mysql: { url?: string; pool?: MysqlPoolLike };
  /** Default `ttlMs` of `@Idempotent` (`SERIALIZED_IDEMPOTENCY_TTL_MS`). */
  idempotencyTtlMs: number;
  reentrant: boolean;
  metrics: 'auto' | 'on' | 'off';
  tracing: 'auto' | 'on' | 'off';
  errorMapping: false | ErrorMappingOptions;
  transaction: TransactionModuleOptions;
}
