import { quoteSequenceName, TOKEN_BLOCK } from '../providers/postgres/postgres-lock.statements';

/** lock_timeout is an int of ms in the server: a longer wait is bounded at this (24.8 days). */
const MAX_LOCK_TIMEOUT_MS = 2_147_483_647;

/**
 * The SQL of transaction mode. Rows come back as objects (`token`, `pid`,
 * `isolation`): every adapter returns them so, some only so.
 */
export interface TransactionLockStatements {
  /** First statement of a transaction the library began. */
  readonly readCommitted: string;
  /** `isolation` of a joined transaction. */
  readonly isolation: string;
  /**
   * `$1` lock key, `$2` lock_timeout → `token`, `pid`. The wait is bounded by
   * the server; lock_timeout goes back to what it was as soon as the lock is
   * granted, so the section's own statements keep the app's setting, and a
   * lock_timeout error can only mean "not granted". The token is drawn after
   * the grant (nested subqueries with OFFSET 0 are never flattened: the calls
   * run inside out, as the postgres driver's lock statement).
   */
  readonly lock: string;
  /** `$1` lock key → `token` (null: busy), `pid`. */
  readonly tryLock: string;
  /** Creates the fencing sequence when missing, as the postgres driver does (same increment). */
  readonly createSequence: string;
  /** `lock` and `tryLock` of a shared holder (`pg_advisory_xact_lock_shared`): beside other shared holders, never beside one alone. */
  readonly shared: { readonly lock: string; readonly tryLock: string };
}

export function transactionLockStatements(fencingSequence: string): TransactionLockStatements {
  const sequence = quoteSequenceName(fencingSequence);
  const nextToken = `nextval('${sequence.replace(/'/g, "''")}'::regclass)::text`;
  const lock = (take: string) =>
    `SELECT ${nextToken} AS token, pg_backend_pid() AS pid FROM (` +
    `SELECT set_config('lock_timeout', l.prev, true) FROM (` +
    `SELECT w.prev, ${take}($1::bigint) FROM (` +
    `SELECT p.prev, set_config('lock_timeout', $2::text, true) FROM (` +
    `SELECT current_setting('lock_timeout') AS prev OFFSET 0) AS p OFFSET 0) AS w OFFSET 0) AS l OFFSET 0) AS granted`;
  const tryLock = (take: string) => `SELECT CASE WHEN ${take}($1::bigint) THEN ${nextToken} END AS token, pg_backend_pid() AS pid`;
  return {
    readCommitted: 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED',
    isolation: "SELECT current_setting('transaction_isolation') AS isolation",
    lock: lock('pg_advisory_xact_lock'),
    tryLock: tryLock('pg_try_advisory_xact_lock'),
    shared: { lock: lock('pg_advisory_xact_lock_shared'), tryLock: tryLock('pg_try_advisory_xact_lock_shared') },
    createSequence: `CREATE SEQUENCE IF NOT EXISTS ${sequence} INCREMENT BY ${TOKEN_BLOCK}`,
  };
}

/** The server-side bound of a wait with `remainingMs` left: never 0, which would mean no bound at all. */
export function lockTimeoutOf(remainingMs: number): string {
  return `${Math.min(MAX_LOCK_TIMEOUT_MS, Math.max(1, Math.ceil(remainingMs)))}ms`;
}
