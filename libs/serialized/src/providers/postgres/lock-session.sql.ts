import type { QueryArrayConfig } from 'pg';

// Session settings applied once per connection. A role default must not cancel a
// long wait (statement_timeout), bound a wait we bound ourselves (lock_timeout), or
// end an idle session that holds a lock (idle_session_timeout, PG 14+). Every statement
// of a lock session is one of ours, prepared once: planned once too (plan_cache_mode, PG
// 12+). Left to choose, the server planned the statements of several holders anew on
// each call (1.1 ms of planning for a 0.3 ms execution, EXPLAIN ANALYZE of `tryGroup`).
// Settings the server does not know are skipped by the join, so one statement fits every version.
export const SESSION_SETUP =
  'SELECT pg_backend_pid(), count(set_config(s.name, v.value, false)) FROM (VALUES ' +
  "('application_name', $1::text), ('statement_timeout', '0'), ('lock_timeout', '0'), " +
  "('idle_in_transaction_session_timeout', '0'), ('idle_session_timeout', '0'), " +
  "('tcp_keepalives_idle', $2::text), ('tcp_keepalives_interval', $2::text), ('tcp_keepalives_count', '3'), " +
  "('plan_cache_mode', 'force_generic_plan')" +
  ') AS v(name, value) JOIN pg_settings s ON s.name = v.name';
// The second statement proves the session is pinned (same pid as the first one),
// and reads the fencing sequence's increment: the block of tokens one draw reserves.
export const SESSION_CHECK =
  'SELECT pg_backend_pid(), to_regclass($1) IS NOT NULL, (SELECT seqincrement FROM pg_sequence WHERE seqrelid = to_regclass($1))';
export const SEQUENCE_INCREMENT = 'SELECT seqincrement FROM pg_sequence WHERE seqrelid = to_regclass($1)';
export const PING: QueryArrayConfig = { text: 'SELECT pg_backend_pid()', rowMode: 'array' };

// This session's granted advisory locks on bigint keys, as the decimal keys the
// provider uses: pg_locks shows a bigint key as classid (high 32 bits) and objid
// (low 32 bits) with objsubid 1; the shift wraps into the sign bit as int8 does.
const OWN_ADVISORY_LOCKS =
  "SELECT ((l.classid::bigint << 32) | l.objid::bigint) AS k FROM pg_locks l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()" +
  ' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())';
/** The session audit (and liveness ping): [backend pid, text[] of the advisory locks this session holds]. */
export const SESSION_AUDIT: QueryArrayConfig = {
  name: 'nestjs-serialized:audit',
  text: `SELECT pg_backend_pid(), ARRAY(SELECT o.k::text FROM (${OWN_ADVISORY_LOCKS}) AS o)`,
  rowMode: 'array',
};
/**
 * `$1` lock key → [true] when this session held it (and now gave it back), no row
 * when it did not. No warning when not held, unlike a bare `pg_advisory_unlock`.
 */
export const GIVE_BACK_IF_HELD = `SELECT pg_advisory_unlock($1::bigint) FROM (${OWN_ADVISORY_LOCKS}) AS o WHERE o.k = $1::bigint`;
