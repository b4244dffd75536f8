import { createHash } from 'node:crypto';
import type { QueryArrayConfig } from 'pg';
import type { TokenOffer } from '../sessions/session.tokens';

/**
 * The increment the fencing sequence gets: one `nextval` reserves this many
 * tokens, so a holder can hand its key on inside its process with the next ones.
 */
export const TOKEN_BLOCK = 1024;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The SQL of one provider, prepared once per lock connection (named statements). */
export interface LockStatements {
  /** Quoted, possibly schema-qualified sequence name, for DDL. */
  readonly sequence: string;
  /** `$1` lock key, `$2` lock_timeout (e.g. `'2500ms'`) → [token text, backend pid]. */
  lock(lockKey: string, lockTimeout: string): QueryArrayConfig;
  /**
   * `$1` lock key, `$2`/`$3` the session's offer (or nulls) → [token text or null
   * when busy, backend pid]. The token is the offered one while the sequence's last
   * value is still the offer's draw, else a new draw.
   */
  tryLock(lockKey: string, offer?: TokenOffer): QueryArrayConfig;
  /** `$1` lock key → [whether this session held it]. */
  unlock(lockKey: string): QueryArrayConfig;
  /**
   * `$1` lock key → [true/false as unlock, or null: kept, because no other session
   * waits for the key in the server]. Strict local hand-off: one round trip either way.
   */
  unlockIfWaited(lockKey: string): QueryArrayConfig;
  /** `$1` lock keys → rows [ordinality, token text or null, backend pid], in key order. */
  tryLockMany(lockKeys: string[]): QueryArrayConfig;
  /** `$1` lock keys → rows [ordinality, whether this session held it], in key order. */
  unlockMany(lockKeys: string[]): QueryArrayConfig;
}

/**
 * Validates a sequence name (`name` or `schema.name`, plain identifiers) and
 * quotes it, so it can be written into SQL text without injection.
 */
export function quoteSequenceName(name: string): string {
  const parts = name.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new Error(
      `fencingSequence ${JSON.stringify(name)} is invalid: expected "name" or "schema.name" made of letters, digits, _ and $`,
    );
  }
  return parts.map((part) => `"${part}"`).join('.');
}

/**
 * Builds the statements of one provider. Each costs one round trip:
 *
 * - lock: `lock_timeout` is set for this statement only (`set_config(..., true)`
 *   in autocommit lasts until the statement ends), so the server itself bounds the
 *   wait and no per-acquire `SET` is needed; the token is drawn from the sequence
 *   only after the lock is granted (subqueries that are never flattened fix the
 *   order set_config → pg_advisory_lock → set_config (back to 0) → nextval).
 *   Holders are granted one after the other, so their tokens strictly increase
 *   across every session.
 * - tryLock: the token is settled only when the lock was taken (CASE evaluates
 *   lazily): the session's offered token while no session drew since its block
 *   began (`pg_sequence_last_value`, a read: no WAL), else `nextval`.
 * - Both return `pg_backend_pid()`, so every acquisition re-checks that the
 *   statement ran on the session the connection was opened on (a transaction
 *   pooler would route statements to different sessions).
 */
export function lockStatements(fencingSequence: string): LockStatements {
  const sequence = quoteSequenceName(fencingSequence);
  const nextToken = `nextval('${sequence.replace(/'/g, "''")}'::regclass)::text`;
  // The wait mark of lock key $1: the same 64 bits as the two-int4 advisory key (a
  // namespace apart from bigint keys: objsubid 2), held for one statement (xact lock).
  // Taken with a try, so it never blocks a wait: an application's own two-int4 lock
  // on the same bits only hides a wait from strict hand-off, it never stalls one.
  const waitMark = `($1::bigint >> 32)::int, (($1::bigint << 32) >> 32)::int`;
  // Nested subqueries, not CTEs: a CTE is materialised (measurably slower per call).
  // Each subquery calls a volatile function and has OFFSET 0, so PostgreSQL never
  // flattens it into its parent: the rows flow, and the calls happen, inside out.
  // lock_timeout goes back to 0 as soon as the advisory lock is granted, so a
  // lock_timeout error can only mean "not granted": had it struck the sequence's
  // relation lock inside nextval, the session would keep the advisory lock.
  // A wait marks itself first (`waitMark`, shared, for the statement's length) so that a
  // strict holder learns in O(1) that another session waits, see unlockIfWaitedText.
  const lockText =
    `SELECT ${nextToken}, pg_backend_pid() FROM (` +
    `SELECT set_config('lock_timeout', '0', true) FROM (` +
    `SELECT pg_advisory_lock($1::bigint) FROM (SELECT set_config('lock_timeout', $2, true), pg_try_advisory_xact_lock_shared(${waitMark}) OFFSET 0) AS wait OFFSET 0` +
    `) AS locked OFFSET 0) AS granted`;
  const lastDrawn = `pg_sequence_last_value('${sequence.replace(/'/g, "''")}'::regclass)`;
  const tryText = `SELECT CASE WHEN pg_try_advisory_lock($1::bigint) THEN CASE WHEN ${lastDrawn} = $2::bigint THEN $3::text ELSE ${nextToken} END END, pg_backend_pid()`;
  const unlockText = 'SELECT pg_advisory_unlock($1::bigint)';
  // Another session waits for the key iff its lock statement holds the wait mark: the
  // exclusive try fails then. (Asking pg_locks instead reads every lock of the server:
  // 16 ms a hand-off with 10,000 keys held.) A wait that begins after this statement is
  // an arrival after the hand-off, as strict order wants.
  const unlockIfWaitedText = `SELECT CASE WHEN pg_try_advisory_xact_lock(${waitMark}) THEN NULL ELSE pg_advisory_unlock($1::bigint) END`;
  // unnest WITH ORDINALITY: one row per key, in order, each evaluated as the single statement would.
  const tryManyText = `SELECT t.i, CASE WHEN pg_try_advisory_lock(t.k) THEN ${nextToken} END, pg_backend_pid() FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, i)`;
  const unlockManyText = 'SELECT t.i, pg_advisory_unlock(t.k) FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, i)';
  // PostgreSQL truncates statement names to 63 bytes (and pg warns on every use):
  // the sequence goes in as a short digest, which keeps names distinct per sequence.
  const digest = createHash('sha256').update(fencingSequence).digest('hex').slice(0, 16);
  const name = (what: string) => `nestjs-serialized:${what}:${digest}`;
  return {
    sequence,
    lock: (lockKey, lockTimeout) => ({ name: name('lock'), text: lockText, values: [lockKey, lockTimeout], rowMode: 'array' }),
    tryLock: (lockKey, offer) => ({
      name: name('try-offer'),
      text: tryText,
      values: [lockKey, offer?.drawn ?? null, offer?.token ?? null],
      rowMode: 'array',
    }),
    unlock: (lockKey) => ({ name: 'nestjs-serialized:unlock', text: unlockText, values: [lockKey], rowMode: 'array' }),
    unlockIfWaited: (lockKey) => ({
      name: 'nestjs-serialized:unlock-if-waited',
      text: unlockIfWaitedText,
      values: [lockKey],
      rowMode: 'array',
    }),
    tryLockMany: (lockKeys) => ({ name: name('try-many'), text: tryManyText, values: [lockKeys], rowMode: 'array' }),
    unlockMany: (lockKeys) => ({ name: 'nestjs-serialized:unlock-many', text: unlockManyText, values: [lockKeys], rowMode: 'array' }),
  };
}
