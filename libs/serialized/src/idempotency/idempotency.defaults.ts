import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

/** Every default of `@Idempotent`, in one place (README, docs/idempotency.md and .env.example quote these). */
export const IDEMPOTENCY_DEFAULTS = {
  /** The request header read when `key` is not given (the IETF draft's `Idempotency-Key`). */
  header: 'idempotency-key',
  /** How long a stored response is replayed: 24 h (`SERIALIZED_IDEMPOTENCY_TTL_MS`). */
  ttlMs: SERIALIZED_DEFAULTS.idempotencyTtlMs,
  /** Responses larger than this (body bytes) are not stored; their duplicates run the handler. */
  maxResponseBytes: 1_048_576,
  /** Response headers stored with every response (besides those an `@Idempotent` lists). */
  storedHeaders: ['content-type', 'content-encoding', 'content-language', 'content-disposition', 'location', 'etag'],
  /** Header that marks a replayed response. */
  replayedHeader: 'Idempotent-Replayed',
  /** `Retry-After` (seconds) sent with a 409 while the first request runs. */
  retryAfterSeconds: 1,
  /** Table of the PostgreSQL store. */
  pgTable: 'nestjs_serialized_idempotency',
  /** Connections of the PostgreSQL store's own small pool, per process. */
  pgPoolSize: 4,
  /** Expired rows a write deletes on its way (the bounded sweep). */
  pgSweepBatch: 10,
  /** Bound on one statement of the PostgreSQL store. */
  pgQueryTimeoutMs: 10_000,
} as const;

/** Bounds of `@Idempotent`'s `maxResponseBytes` (`ttlMs` is the options table's `idempotencyTtlMs` row). */
export const IDEMPOTENCY_LIMITS = {
  maxResponseBytes: { min: 0, max: 64 * 1_048_576 },
} as const;
