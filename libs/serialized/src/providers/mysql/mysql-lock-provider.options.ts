import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import type { MysqlPoolLike } from '../../peer-clients.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';

/** Options of `MysqlLockProvider`; module options (`mysql: { … }`) fill them in. */
export interface MysqlLockProviderOptions extends LockProviderCommonOptions {
  /** `mysql://user:password@host:3306/database` (default: `MYSQL_URL` through the module). */
  url?: string;
  /**
   * A mysql2 pool the app already has (callback or promise API). Its connection
   * settings open a small lock pool of the library's own: lock sessions never take
   * the app's work connections. The library never ends this pool.
   */
  pool?: MysqlPoolLike;
  /** Lock sessions per process (default 10): distinct keys waited for in the server at once. */
  lockPoolSize?: number;
  /**
   * How long a lock session may leave a statement or a liveness ping unanswered
   * before it counts as lost (default 10 000 ms): the connection is closed and each
   * holder's `signal` aborts with `LockLostError`. Our own event-loop stalls are not
   * counted; a closed or reset socket and a `KILL` are noticed at once.
   */
  sessionTimeoutMs?: number;
  /** Idle lock sessions are closed after this long (default 10 000 ms). */
  idleTimeoutMs?: number;
  /** Table of the fencing counter (default `nestjs_serialized_fencing`, `database.table` accepted). */
  fencingTable?: string;
  /** Create the fencing table when missing (default true; off for a role that may not run DDL). */
  createSchema?: boolean;
}

/** How held sessions are watched, from `leaseMs` and `sessionTimeoutMs`. */
export interface MysqlSessionTimings {
  /** Time between liveness pings of one held session. */
  readonly pingEveryMs: number;
  /** Silence (in our own running time) after which a session counts as lost. */
  readonly sessionTimeoutMs: number;
  /** The sessions' `wait_timeout` (s): the server ends a session silent that long, freeing its locks. */
  readonly serverIdleSeconds: number;
}

/** From options the constructor validated (config/provider-options.validator.ts). */
export function mysqlTimings(options: Pick<MysqlLockProviderOptions, 'leaseMs' | 'sessionTimeoutMs'>): MysqlSessionTimings {
  const leaseMs = options.leaseMs ?? SERIALIZED_DEFAULTS.leaseMs;
  const sessionTimeoutMs = options.sessionTimeoutMs ?? SERIALIZED_DEFAULTS.mysqlSessionTimeoutMs;
  const pingEveryMs = Math.max(50, Math.min(1000, Math.floor(leaseMs / 3)));
  // Pinged every pingEveryMs while locks are held; the server's bound leaves room for a few missed pings.
  return { pingEveryMs, sessionTimeoutMs, serverIdleSeconds: Math.max(5, Math.ceil(leaseMs / 1000)) };
}

/** The lock pool's size, from options the constructor validated. */
export function mysqlPoolSizeOf(options: Pick<MysqlLockProviderOptions, 'lockPoolSize'>): number {
  return options.lockPoolSize ?? SERIALIZED_DEFAULTS.mysqlLockPoolSize;
}

/** The fencing table's name (validated by the constructor), quoted for SQL text. */
export function fencingTableOf(options: Pick<MysqlLockProviderOptions, 'fencingTable'>): string {
  const table = options.fencingTable ?? SERIALIZED_DEFAULTS.mysqlFencingTable;
  return table
    .split('.')
    .map((part) => `\`${part}\``)
    .join('.');
}

/** What the app pool's connection settings say about where and as whom to connect (the rest is the app's own taste). */
const WHERE_AND_WHO = [
  'host',
  'port',
  'localAddress',
  'socketPath',
  'user',
  'password',
  'password2',
  'password3',
  'passwordSha1',
  'database',
  'ssl',
  'charsetNumber',
  'authPlugins',
  'insecureAuth',
  'enableCleartextPlugin',
  'compress',
];

/**
 * The connection settings of the lock sessions: from `url`, or copied from the
 * app's mysql2 pool (its `config.connectionConfig`). The library's own settings
 * come last: numbers as they are (bigints as strings), multiple statements.
 */
export function mysqlConnectionConfig(options: Pick<MysqlLockProviderOptions, 'url' | 'pool'>): Record<string, unknown> {
  let base: Record<string, unknown> = {};
  if (options.pool) {
    const pool = options.pool as unknown as { pool?: { config?: { connectionConfig?: object } }; config?: { connectionConfig?: object } };
    const config = pool.config?.connectionConfig ?? pool.pool?.config?.connectionConfig ?? {};
    base = Object.fromEntries(Object.entries(config).filter(([name, value]) => WHERE_AND_WHO.includes(name) && value !== undefined));
  } else if (options.url !== undefined) {
    base = { uri: options.url };
  }
  // Multiple statements: a lock statement and the fencing counter's read go as one
  // round trip. Only the library's own statements run on these connections, with
  // every value a placeholder.
  return { ...base, supportBigNumbers: true, bigNumberStrings: true, multipleStatements: true, dateStrings: true };
}
