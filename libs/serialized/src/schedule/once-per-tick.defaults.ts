/** Defaults and bounds of `@OncePerTick` (docs/scheduling.md). */
export const ONCE_PER_TICK_DEFAULTS = Object.freeze({
  /** How far ahead of the backend's clock a claim may be. */
  maxClockSkewMs: 1000,
  /** Upper bound of `maxClockSkewMs`: an hour (a clock further off is broken, not skewed). */
  maxClockSkewLimitMs: 3_600_000,
  /** Longest `name`. */
  maxNameLength: 200,
  /**
   * How long a Redis tick record outlives its last claim or renewal. Forgetting the
   * last claimed tick is harmless once its schedule has moved on: a firing names
   * the latest tick due, never an older one.
   */
  redisRecordRetentionMs: 7 * 86_400_000,
  /** The PostgreSQL table of tick records (one row per name and key prefix). */
  pgTable: 'nestjs_serialized_ticks',
});
