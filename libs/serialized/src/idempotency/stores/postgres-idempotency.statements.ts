import { IDEMPOTENCY_DEFAULTS } from '../idempotency.defaults';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The SQL of the PostgreSQL idempotency store, for one table. */
export interface IdempotencyStatements {
  /** Quoted, possibly schema-qualified table name. */
  readonly table: string;
  /** The DDL that creates the table and its index (idempotent; docs/idempotency.md ships it). */
  readonly schema: string;
  /** `$1` table name (as given) → whether the table exists. */
  readonly exists: string;
  /** `$1` key → the live record's text, if any. */
  readonly get: string;
  /** `$1` key, `$2` record text, `$3` TTL in ms: upsert, deleting a few expired rows on the way. */
  readonly set: string;
}

/**
 * Validates a table name (`name` or `schema.name`, plain identifiers) and builds
 * the statements, so the name can be written into SQL text without injection.
 *
 * Writes sweep: each one deletes up to `pgSweepBatch` expired rows (oldest first,
 * skipping rows another sweep holds) in the same statement, so expired records
 * leave at a rate that outpaces new ones without a timer or a job; the index on
 * `expires_at` keeps that probe cheap when nothing has expired.
 */
export function idempotencyStatements(tableName: string = IDEMPOTENCY_DEFAULTS.pgTable): IdempotencyStatements {
  const parts = tableName.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new Error(
      `idempotencyTable ${JSON.stringify(tableName)} is invalid: expected "name" or "schema.name" made of letters, digits, _ and $`,
    );
  }
  const table = parts.map((part) => `"${part}"`).join('.');
  const index = `"${`${parts[parts.length - 1]}_expires_at`.slice(0, 63)}"`;
  return {
    table,
    schema:
      `CREATE TABLE IF NOT EXISTS ${table} (\n` +
      `  key text PRIMARY KEY,\n` +
      `  record text NOT NULL,\n` +
      `  expires_at timestamptz NOT NULL\n` +
      `);\n` +
      `CREATE INDEX IF NOT EXISTS ${index} ON ${table} (expires_at);`,
    exists: 'SELECT to_regclass($1) IS NOT NULL',
    get: `SELECT record FROM ${table} WHERE key = $1 AND expires_at > now()`,
    set:
      `WITH swept AS (DELETE FROM ${table} WHERE ctid = ANY (ARRAY(` +
      `SELECT ctid FROM ${table} WHERE expires_at < now() AND key <> $1 ` +
      `ORDER BY expires_at LIMIT ${IDEMPOTENCY_DEFAULTS.pgSweepBatch} FOR UPDATE SKIP LOCKED))) ` +
      `INSERT INTO ${table} (key, record, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond') ` +
      `ON CONFLICT (key) DO UPDATE SET record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
  };
}
