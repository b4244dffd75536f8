import type { HandOffMode } from './acquire-options.interface';

/**
 * Every default of the library, in one place (the README and .env.example quote
 * these). Bounds, environment variables and what each option accepts are in the
 * options table, `config/serialized-options.schema.ts`.
 */
export const SERIALIZED_DEFAULTS = {
  driver: 'memory',
  keyPrefix: 'serialized',
  leaseMs: 30_000,
  waitTimeoutMs: 10_000,
  maxPending: 1000,
  maxPendingTotal: 100_000,
  connectTimeoutMs: 3000,
  shutdownGraceMs: 10_000,
  /** Whether a call whose async context already holds its key joins that holder. */
  reentrant: true,
  /** OpenTelemetry metrics: `auto` records them when @opentelemetry/api is installed (docs/observability.md). */
  metrics: 'auto' as 'auto' | 'on' | 'off',
  /** OpenTelemetry traces: `auto` records spans when @opentelemetry/api is installed and a TracerProvider registered (docs/observability.md). */
  tracing: 'auto' as 'auto' | 'on' | 'off',
  pgLockPoolSize: 10,
  /** Idle PostgreSQL lock sessions are closed after this long. */
  pgIdleTimeoutMs: 10_000,
  /** Sequence PostgreSQL fencing tokens are drawn from. */
  pgFencingSequence: 'nestjs_serialized_fencing_token',
  /** PostgreSQL local hand-off: `strict` keeps arrival order, as on Redis; `cohort` is the opt-in (docs/providers/postgres.md). */
  pgHandoff: 'strict' as HandOffMode,
  pgMaxLocalHandOffs: 32,
  /** How long a Redis waiter keeps its place without a heart-beat. */
  redisHeartbeatMs: 5000,
  /** Redis commands on the wire at once per connection (per Cluster node). */
  redisMaxInFlight: 1000,
  /** Redis local hand-off: `strict` keeps global arrival order; `cohort` serves a process's own waiters first (bounded). */
  redisHandoff: 'strict' as HandOffMode,
  /** Redis: most in-process hand-offs in a row before the key goes back to Redis. */
  redisMaxLocalHandOffs: 16,
  /** Redis replicas that must acknowledge a grant or renewal (`WAIT`) before it counts: 0, none (asynchronous replication). */
  redisReplicaAcks: 0,
  /** How long a grant or renewal waits for those acknowledgements (`WAIT`'s timeout). */
  redisReplicaTimeoutMs: 500,
  /** How long a PostgreSQL lock session may leave a statement or liveness ping unanswered before it counts as lost. */
  pgSessionTimeoutMs: 10_000,
  /** Connections of the MySQL driver's own lock pool. */
  mysqlLockPoolSize: 10,
  /** Idle MySQL lock sessions are closed after this long. */
  mysqlIdleTimeoutMs: 10_000,
  /** How long a MySQL lock session may leave a statement or liveness ping unanswered before it counts as lost. */
  mysqlSessionTimeoutMs: 10_000,
  /** Table of the MySQL driver's fencing counter. */
  mysqlFencingTable: 'nestjs_serialized_fencing',
  /** How long `@Idempotent` replays a stored response: 24 h (`SERIALIZED_IDEMPOTENCY_TTL_MS`). */
  idempotencyTtlMs: 86_400_000,
  /** Longest key value accepted from a request, in characters. */
  maxKeyLength: 512,
  /** Most distinct keys one call may hold together (a key set: `@Serialized([...])`, `run([...])`). */
  maxKeysPerSet: 16,
  /** `Retry-After` (seconds) sent with a 429 or a 503. */
  retryAfterSeconds: 1,
} as const;
