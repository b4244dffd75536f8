/**
 * The clients an app may hand to the library (`redis.client`, `postgres.pool`),
 * typed by their shape rather than by `ioredis` and `pg`: both are optional peers,
 * so the library's type declarations must compile in an app that has neither
 * installed (an app on the in-memory driver). An ioredis `Redis` or `Cluster` and a
 * `pg` `Pool` match these shapes as they are; the library uses them as what they are.
 * The shapes are what the options check at start-up (README, "Configuration").
 */

/** An ioredis client the app already has: `new Redis(…)` (standalone or Sentinel) or `new Cluster(…)`. */
export interface RedisClientLike {
  /** ioredis' connection status (`'wait'`, `'ready'`, `'end'`, …). */
  readonly status: string;
  // `never[]` parameters: any ioredis signature of these methods matches.
  duplicate(...args: never[]): unknown;
  quit(...args: never[]): Promise<unknown>;
}

/** A `pg` `Pool` the app already has: only its connection settings (`options`) are read. */
export interface PgPoolLike {
  readonly options: object;
  connect(...args: never[]): unknown;
  query(...args: never[]): unknown;
}

/** A mysql2 pool the app already has (`createPool(…)`, callback or promise API): only its connection settings are read. */
export interface MysqlPoolLike {
  getConnection(...args: never[]): unknown;
  query(...args: never[]): unknown;
}
