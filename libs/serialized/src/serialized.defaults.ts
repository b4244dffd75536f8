/** Every default of the library, in one place (the README and .env.example quote these). */
export const SERIALIZED_DEFAULTS = {
  driver: 'memory',
  keyPrefix: 'serialized',
  leaseMs: 30_000,
  waitTimeoutMs: 10_000,
  maxPending: 1000,
  connectTimeoutMs: 3000,
  shutdownGraceMs: 10_000,
  pgLockPoolSize: 10,
  /** How long a PostgreSQL lock session may leave a statement or liveness ping unanswered before it counts as lost. */
  pgSessionTimeoutMs: 10_000,
  /** Longest key value accepted from a request, in characters. */
  maxKeyLength: 512,
  /** `Retry-After` (seconds) sent with a 429. */
  retryAfterSeconds: 1,
} as const;

/** Bounds every numeric option is checked against (options and environment alike). */
export const SERIALIZED_LIMITS = {
  leaseMs: { min: 100, max: 24 * 3600_000 },
  waitTimeoutMs: { min: 0, max: 24 * 3600_000 },
  maxPending: { min: 0, max: 10_000_000 },
  connectTimeoutMs: { min: 100, max: 600_000 },
  shutdownGraceMs: { min: 0, max: 3600_000 },
  pgLockPoolSize: { min: 1, max: 1000 },
} as const;
