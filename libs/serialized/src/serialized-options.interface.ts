import type { Cluster, Redis } from 'ioredis';
import type { Pool } from 'pg';

/** Which backend holds the locks. */
export type SerializedDriver = 'memory' | 'redis' | 'postgres';

/** Options of `SerializedModule.forRoot()`. Every field is optional; see `SERIALIZED_DEFAULTS`. */
export interface SerializedModuleOptions {
  /** Backend (default: `SERIALIZED_DRIVER`, else `'memory'`). */
  driver?: SerializedDriver;
  redis?: {
    /** `redis://` / `rediss://` URL (default: `REDIS_URL`). The library opens and closes its connections. */
    url?: string;
    /** A client the app already has (standalone, Sentinel or Cluster). The library never closes it. */
    client?: Redis | Cluster;
  };
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
  };
  /** Namespace of every lock key in the backend (default `serialized`). */
  keyPrefix?: string;
  /** Lease of a held lock, renewed about every lease/3 while held (default 30 000 ms). */
  leaseMs?: number;
  /** Longest wait for a busy key in `wait` mode (default 10 000 ms). */
  waitTimeoutMs?: number;
  /** Most waiters per key and process; beyond it, `LockBusyError` (default 1000). */
  maxPending?: number;
  /** Bound on connecting to the backend before `LockBackendError` (default 3000 ms). */
  connectTimeoutMs?: number;
  /** How long `app.close()` waits for running handlers to release their locks (default 10 000 ms). */
  shutdownGraceMs?: number;
}

/** The options with every default applied and every value validated. */
export interface ResolvedSerializedOptions {
  driver: SerializedDriver;
  redis: { url?: string; client?: Redis | Cluster };
  postgres: { connectionString?: string; pool?: Pool; lockPoolSize: number };
  keyPrefix: string;
  leaseMs: number;
  waitTimeoutMs: number;
  maxPending: number;
  connectTimeoutMs: number;
  shutdownGraceMs: number;
}
