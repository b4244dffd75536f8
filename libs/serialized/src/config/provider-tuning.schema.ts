import { HAND_OFF_MODES } from '../acquire-options.interface';
import { SERIALIZED_DEFAULTS as D } from '../serialized.defaults';
import type { OptionSpec } from './option-spec.definition';

const SQL_NAME = '[A-Za-z_][A-Za-z0-9_$]{0,62}';
const HOUR_MS = 3600_000;

/**
 * The rows of the options table (serialized-options.schema.ts) that tune one
 * provider: module `redis: { … }` and `postgres: { … }`, their variables, and the
 * flat constructor options they map onto (config/provider-options.mapper.ts).
 */
export const PROVIDER_TUNING_OPTIONS = {
  redisHeartbeatMs: {
    type: 'integer',
    option: 'redis.heartbeatMs',
    env: 'SERIALIZED_REDIS_HEARTBEAT_MS',
    drivers: ['redis'],
    unit: 'ms',
    default: D.redisHeartbeatMs,
    min: 100,
    max: 600_000,
    meaning: 'a waiter keeps its place in the Redis queue this long without a heart-beat (same in every process)',
  },
  redisMaxInFlight: {
    type: 'integer',
    option: 'redis.maxInFlight',
    env: 'SERIALIZED_REDIS_MAX_IN_FLIGHT',
    drivers: ['redis'],
    unit: 'count',
    default: D.redisMaxInFlight,
    min: 1,
    max: 100_000,
    meaning: 'commands on the wire at once per connection (per Cluster node); more wait in order',
  },
  redisHandoff: {
    type: 'choice',
    option: 'redis.handoff',
    env: 'SERIALIZED_REDIS_HANDOFF',
    drivers: ['redis'],
    values: HAND_OFF_MODES,
    default: D.redisHandoff,
    meaning:
      "local hand-off: 'strict' keeps global arrival order; 'cohort' serves this process's own waiters first, up to maxLocalHandOffs in a row: docs/semantics.md",
  },
  redisMaxLocalHandOffs: {
    type: 'integer',
    option: 'redis.maxLocalHandOffs',
    env: 'SERIALIZED_REDIS_MAX_LOCAL_HANDOFFS',
    drivers: ['redis'],
    unit: 'count',
    default: D.redisMaxLocalHandOffs,
    min: 0,
    max: 1000,
    meaning: 'most in-process hand-offs in a row before the key goes back to Redis (0: none)',
  },
  redisReplicaAcks: {
    type: 'integer',
    option: 'redis.replicas.acks',
    env: 'SERIALIZED_REDIS_REPLICA_ACKS',
    drivers: ['redis'],
    unit: 'count',
    default: D.redisReplicaAcks,
    min: 0,
    max: 16,
    meaning:
      'replicas that must have a grant or renewal (Redis `WAIT`) before it counts, so a fail-over never grants a key or a fencing token twice; 0: none (docs/providers/redis.md, *Fail-over*)',
  },
  redisReplicaTimeoutMs: {
    type: 'integer',
    option: 'redis.replicas.timeoutMs',
    env: 'SERIALIZED_REDIS_REPLICA_TIMEOUT_MS',
    drivers: ['redis'],
    unit: 'ms',
    default: D.redisReplicaTimeoutMs,
    min: 1,
    max: 60_000,
    meaning: 'with replica acks: how long a grant or renewal waits for them (fewer: the grant is undone, 503); below the connect timeout',
  },
  lockPoolSize: {
    type: 'integer',
    option: 'postgres.lockPoolSize',
    env: 'SERIALIZED_PG_LOCK_POOL_SIZE',
    drivers: ['postgres'],
    unit: 'count',
    default: D.pgLockPoolSize,
    min: 1,
    max: 1000,
    meaning: "sessions of the library's own PostgreSQL lock pool",
  },
  pgSessionTimeoutMs: {
    type: 'integer',
    option: 'postgres.sessionTimeoutMs',
    env: 'SERIALIZED_PG_SESSION_TIMEOUT_MS',
    drivers: ['postgres'],
    unit: 'ms',
    default: D.pgSessionTimeoutMs,
    min: 100,
    max: HOUR_MS,
    meaning: 'a lock session silent this long (our own stalls not counted) counts as lost',
  },
  pgIdleTimeoutMs: {
    type: 'integer',
    option: 'postgres.idleTimeoutMs',
    env: 'SERIALIZED_PG_IDLE_TIMEOUT_MS',
    drivers: ['postgres'],
    unit: 'ms',
    default: D.pgIdleTimeoutMs,
    min: 0,
    max: HOUR_MS,
    meaning: 'idle lock sessions are closed after this long',
  },
  pgApplicationName: {
    type: 'text',
    option: 'postgres.applicationName',
    env: 'SERIALIZED_PG_APPLICATION_NAME',
    drivers: ['postgres'],
    pattern: /^[\x20-\x7e]{1,63}$/,
    format: '1 to 63 printable ASCII characters',
    defaultText: 'nestjs-serialized:<keyPrefix>',
    meaning: '`application_name` of the lock sessions (find them in `pg_stat_activity`)',
  },
  pgFencingSequence: {
    type: 'text',
    option: 'postgres.fencingSequence',
    env: 'SERIALIZED_PG_FENCING_SEQUENCE',
    drivers: ['postgres'],
    pattern: new RegExp(`^${SQL_NAME}(\\.${SQL_NAME})?$`),
    format: 'name or schema.name, of letters, digits, _ and $',
    default: D.pgFencingSequence,
    meaning: 'sequence fencing tokens are drawn from',
  },
  pgHandoff: {
    type: 'choice',
    option: 'postgres.handoff',
    env: 'SERIALIZED_PG_HANDOFF',
    drivers: ['postgres'],
    values: HAND_OFF_MODES,
    default: D.pgHandoff,
    meaning:
      "local hand-off: 'strict' passes a held key to this process's next caller only while no other process waits in the server; 'cohort' serves this process's own callers first, up to maxLocalHandOffs in a row: docs/providers/postgres.md",
  },
  pgMaxLocalHandOffs: {
    type: 'integer',
    option: 'postgres.maxLocalHandOffs',
    env: 'SERIALIZED_PG_MAX_LOCAL_HANDOFFS',
    drivers: ['postgres'],
    unit: 'count',
    default: D.pgMaxLocalHandOffs,
    min: 0,
    max: 1023,
    meaning: 'local hand-offs in a row before a held key goes back to PostgreSQL (0: none)',
  },
  pgCreateSchema: {
    type: 'boolean',
    option: 'postgres.createSchema',
    env: 'SERIALIZED_PG_CREATE_SCHEMA',
    drivers: ['postgres'],
    default: true,
    meaning: "create the fencing sequence and @Idempotent's table when missing (false: docs/providers/postgres.md has the SQL)",
  },
} as const satisfies Record<string, OptionSpec>;

const TABLE_PART = '[A-Za-z_][A-Za-z0-9_$]{0,63}';

/** A row of a provider's constructor that the module does not offer (no module option, no variable). */
type ConstructorOptionSpec = OptionSpec & {
  readonly provider: 'PostgresLockProvider' | 'MysqlLockProvider';
  /** Its name in the constructor's options. */
  readonly name: string;
};

/**
 * Constructor options with no module option or variable: validated by the same
 * rules as the table's rows (config/provider-options.validator.ts), not in the
 * README's table.
 */
export const PROVIDER_CONSTRUCTOR_OPTIONS = {
  pgIdempotencyTable: {
    provider: 'PostgresLockProvider',
    name: 'idempotencyTable',
    type: 'text',
    pattern: new RegExp(`^${SQL_NAME}(\\.${SQL_NAME})?$`),
    format: 'name or schema.name, of letters, digits, _ and $ (default nestjs_serialized_idempotency)',
    meaning: "table of @Idempotent's records",
  },
  mysqlLockPoolSize: {
    provider: 'MysqlLockProvider',
    name: 'lockPoolSize',
    type: 'integer',
    unit: 'count',
    default: D.mysqlLockPoolSize,
    min: 1,
    max: 1000,
    meaning: "sessions of the library's own MySQL lock pool",
  },
  mysqlSessionTimeoutMs: {
    provider: 'MysqlLockProvider',
    name: 'sessionTimeoutMs',
    type: 'integer',
    unit: 'ms',
    default: D.mysqlSessionTimeoutMs,
    min: 100,
    max: HOUR_MS,
    meaning: 'a lock session silent this long (our own stalls not counted) counts as lost',
  },
  mysqlIdleTimeoutMs: {
    provider: 'MysqlLockProvider',
    name: 'idleTimeoutMs',
    type: 'integer',
    unit: 'ms',
    default: D.mysqlIdleTimeoutMs,
    min: 0,
    max: HOUR_MS,
    meaning: 'idle lock sessions are closed after this long',
  },
  mysqlFencingTable: {
    provider: 'MysqlLockProvider',
    name: 'fencingTable',
    type: 'text',
    pattern: new RegExp(`^${TABLE_PART}(\\.${TABLE_PART})?$`),
    format: 'name or database.name, of letters, digits, _ and $',
    default: D.mysqlFencingTable,
    meaning: 'table of the fencing counter',
  },
  mysqlCreateSchema: {
    provider: 'MysqlLockProvider',
    name: 'createSchema',
    type: 'boolean',
    default: true,
    meaning: 'create the fencing table when missing',
  },
} as const satisfies Record<string, ConstructorOptionSpec>;
