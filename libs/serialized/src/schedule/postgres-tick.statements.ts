import { ONCE_PER_TICK_DEFAULTS } from './once-per-tick.defaults';

/** The server's clock in milliseconds since the epoch (every lease is judged on it). */
const NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * The SQL of the PostgreSQL tick records: one row per name (keyed `<keyPrefix>:<name>`)
 * holding the last claimed tick and, while its run runs, its owner and the server
 * time until which it counts as running. Each statement is one atomic step.
 */
export const TICK_STATEMENTS = Object.freeze({
  table: `"${ONCE_PER_TICK_DEFAULTS.pgTable}"`,
  /** The DDL (idempotent; docs/scheduling.md ships it for roles that may not run DDL). */
  schema:
    `CREATE TABLE IF NOT EXISTS "${ONCE_PER_TICK_DEFAULTS.pgTable}" (\n` +
    `  name text PRIMARY KEY,\n` +
    `  tick bigint NOT NULL,\n` +
    `  running_until bigint NOT NULL,\n` +
    `  owner text NOT NULL\n` +
    `);`,
  /** `$1` table name → whether the table exists. */
  exists: 'SELECT to_regclass($1) IS NOT NULL',
  /**
   * `$1` name, `$2` tick, `$3` leaseMs, `$4` owner, `$5` maxAheadMs → claimed (0 or
   * 1), the server's clock, and the row as it was before (for the refusal's reason).
   * The upsert's condition is evaluated on the latest row version under its row lock,
   * so of two instances claiming one tick at once exactly one succeeds.
   */
  claim:
    `WITH now AS (SELECT ${NOW_MS} AS ms), ` +
    `before AS (SELECT tick, running_until FROM "${ONCE_PER_TICK_DEFAULTS.pgTable}" WHERE name = $1), ` +
    `claimed AS (` +
    `INSERT INTO "${ONCE_PER_TICK_DEFAULTS.pgTable}" AS t (name, tick, running_until, owner) ` +
    `SELECT $1, $2::bigint, now.ms + $3::bigint, $4 FROM now WHERE $2::bigint <= now.ms + $5::bigint ` +
    `ON CONFLICT (name) DO UPDATE SET tick = EXCLUDED.tick, running_until = EXCLUDED.running_until, owner = EXCLUDED.owner ` +
    `WHERE t.tick < EXCLUDED.tick AND t.running_until <= (SELECT ms FROM now) ` +
    `RETURNING 1) ` +
    `SELECT (SELECT count(*) FROM claimed)::int, (SELECT ms FROM now)::text, (SELECT tick FROM before)::text, (SELECT running_until FROM before)::text`,
  /** `$1` name, `$2` owner, `$3` leaseMs → a row when the record was still the owner's. */
  renew: `UPDATE "${ONCE_PER_TICK_DEFAULTS.pgTable}" SET running_until = ${NOW_MS} + $3::bigint WHERE name = $1 AND owner = $2 RETURNING 1`,
  /** `$1` name, `$2` owner. */
  finish: `UPDATE "${ONCE_PER_TICK_DEFAULTS.pgTable}" SET running_until = 0 WHERE name = $1 AND owner = $2`,
});
