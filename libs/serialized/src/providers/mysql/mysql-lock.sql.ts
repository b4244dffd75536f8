/**
 * The statements of the MySQL / MariaDB driver. Named locks belong to the session
 * (not to a transaction), so every statement runs in autocommit mode: the fencing
 * counter's writes commit at once, and its reads see every commit before them.
 */

/** `?` name → [1 granted, 0 held by another session]. Never waits. Sent with the counter's read after it (`MysqlSession`). */
export const TRY_LOCK = 'SELECT GET_LOCK(?, 0)';
/** `?` name, `?` whole seconds → [1 granted, 0 the server's timeout ran out, NULL the wait was killed]. */
export const WAIT_LOCK = 'SELECT GET_LOCK(?, ?)';
/** `?` name → [1 released, 0 held by another session, NULL no such lock]. */
export const RELEASE_LOCK = 'SELECT RELEASE_LOCK(?)';
/** The session's id, and whether the server is MariaDB (liveness ping and session check). */
export const SESSION_ID = 'SELECT CONNECTION_ID()';
/** `?` connection id: ends the statement that session runs (a lock wait) — sent on another session. */
export const KILL_QUERY = 'KILL QUERY ?';

/**
 * Session settings: `wait_timeout` ends a session the server has not heard from for
 * that many seconds, so the locks of a client that vanished (a network cut, a frozen
 * host) free themselves within about a lease; held sessions are pinged well within it.
 */
export const SESSION_SETUP = 'SET SESSION wait_timeout = ?, SESSION interactive_timeout = ?';

/** The fencing counter: one row, drawn in blocks (see `SessionTokens`). */
export function counterStatements(table: string) {
  return {
    /** Creates the table and its row if missing (concurrent callers are harmless). */
    create: [
      `CREATE TABLE IF NOT EXISTS ${table} (id TINYINT UNSIGNED NOT NULL PRIMARY KEY, last_token BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
      `INSERT IGNORE INTO ${table} (id, last_token) VALUES (1, 0)`,
    ],
    /** `?` block size → reserves the next block: the new value (the block's last token) is `insertId`. */
    draw: `UPDATE ${table} SET last_token = LAST_INSERT_ID(last_token + ?) WHERE id = 1`,
    /** The counter's last value (whether a session's block is still the newest). */
    read: `SELECT last_token FROM ${table} WHERE id = 1`,
  };
}

export type CounterStatements = ReturnType<typeof counterStatements>;
