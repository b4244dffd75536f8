import type { Cluster, Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { ErrorMappingOptions } from './interceptors/serialized-error.mapper';
import type { LockProviderCommonOptions } from './lock-provider-options.interface';

/** Which backend holds the locks. */
export type SerializedDriver = 'memory' | 'redis' | 'postgres';

/**
 * Options of `SerializedModule.forRoot()`. Every field is optional; see `SERIALIZED_DEFAULTS`.
 * Besides the backend, they carry what every provider takes (`keyPrefix`, `leaseMs`,
 * `waitTimeoutMs`, `maxPending`, `connectTimeoutMs`, `shutdownGraceMs`).
 */
export interface SerializedModuleOptions extends LockProviderCommonOptions {
  /** Backend (default: `SERIALIZED_DRIVER`, else `'memory'`). */
  driver?: SerializedDriver;
  /**
   * Default of `@Serialized`'s and `LockService.run`'s `reentrant` (default: `SERIALIZED_REENTRANT`,
   * else `true`). `false`: no call joins an enclosing holder of its key; each queues like anyone else.
   */
  reentrant?: boolean;
  /**
   * Redis: how a held key passes to this process's own next waiter (default:
   * `SERIALIZED_HANDOFF`, else `'strict'`). `'strict'`: in-process only while global
   * arrival order allows it; `'cohort'`: this process's waiters first, a bounded
   * number in a row (docs/semantics.md, *Local hand-off*).
   */
  handoff?: 'strict' | 'cohort';
  redis?: {
    /** `redis://` / `rediss://` URL (default: `REDIS_URL`). The library opens and closes its connections. */
    url?: string;
    /** A client the app already has (standalone, Sentinel or Cluster). The library never closes it. */
    client?: Redis | Cluster;
  };
  /**
   * How library errors that escape a request handler are answered (docs/errors.md):
   * on (default: 400 / 429 / 503 in each transport's form), `{ body }` to change
   * what the client receives, or `false` to leave them to the app's own filters.
   */
  errorMapping?: boolean | ErrorMappingOptions;
  postgres?: {
    /** `postgres://` URL (default: `DATABASE_URL`). */
    connectionString?: string;
    /**
     * A `pg` Pool the app already has. Its connection settings are reused for a
     * small lock pool of the library's own: lock sessions never take the app's
     * work connections. The library never ends this pool.
     */
    pool?: Pool;
    /** Connections of the library's lock pool per process (default 10, `SERIALIZED_PG_LOCK_POOL_SIZE`). */
    lockPoolSize?: number;
    /**
     * Create the fencing sequence and `@Idempotent`'s table when missing (default
     * true). Off for a role that may not run DDL: docs/providers/postgres.md has the SQL.
     */
    createSchema?: boolean;
  };
}

/** The options with every default applied and every value validated. */
export interface ResolvedSerializedOptions extends Required<LockProviderCommonOptions> {
  driver: SerializedDriver;
  reentrant: boolean;
  handoff: 'strict' | 'cohort';
  redis: { url?: string; client?: Redis | Cluster };
  postgres: { connectionString?: string; pool?: Pool; lockPoolSize: number; createSchema?: boolean };
  errorMapping: false | ErrorMappingOptions;
}
