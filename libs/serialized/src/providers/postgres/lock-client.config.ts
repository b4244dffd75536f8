import type { ClientConfig } from 'pg';
import type { PgPoolLike } from '../../peer-clients.interface';

// pg.Pool options that describe the pool, not the connection, plus timeouts the
// lock sessions set for themselves (a role or app default must not cut a wait short).
const NOT_FOR_LOCK_SESSIONS = [
  'max',
  'min',
  'idleTimeoutMillis',
  'maxUses',
  'allowExitOnIdle',
  'maxLifetimeSeconds',
  'log',
  'Client',
  'Promise',
  'poolSize',
  'connectionTimeoutMillis',
  'statement_timeout',
  'query_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'application_name',
] as const;

/**
 * The connection settings of the lock sessions: the URL, or the settings of a
 * `pg.Pool` the app already has. The app's pool itself is never used for locks:
 * a holder waiting for a work connection must not be able to starve it, and a
 * session lock pins its connection for as long as it is held.
 */
export function lockClientConfig(source: { connectionString?: string; pool?: PgPoolLike }): ClientConfig {
  if (source.pool) {
    const options = source.pool.options as unknown as ClientConfig & Record<string, unknown>;
    const config: Record<string, unknown> = { ...options };
    for (const field of NOT_FOR_LOCK_SESSIONS) delete config[field];
    // pg.Pool hides the password from enumeration (and so from a spread).
    if (options.password !== undefined) config.password = options.password;
    return config as ClientConfig;
  }
  return source.connectionString === undefined ? {} : { connectionString: source.connectionString };
}
