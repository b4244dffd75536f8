import { createHash } from 'node:crypto';
import type { QueryArrayConfig } from 'pg';
import type { TokenOffer } from '../sessions/session.tokens';
import { GATE_MASK } from './advisory-key.hash';

/**
 * The increment the fencing sequence gets: one `nextval` reserves this many
 * tokens, so a holder can hand its key on inside its process with the next ones.
 */
export const TOKEN_BLOCK = 1024;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The SQL of one provider, prepared once per lock session (named statements). */
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
  /**
   * A key set at once: `$1` lock keys (canonical order), `$2`/`$3` the session's
   * offer (or nulls) → [first token text or null, keys taken before one was busy,
   * backend pid]. All or none: each key is tried in order until one is busy, and
   * then those taken are unlocked in the same statement. With every key taken, the
   * keys get the first token and the ones after it (one block, see `trySetText`).
   */
  trySet(lockKeys: readonly string[], offer?: TokenOffer): QueryArrayConfig;
  /** Shared holders (`shared: true`): the statements of {@link ShapeStatements}. */
  readonly shapes: ShapeStatements;
}

/**
 * The statements of holders that share a key (see docs/providers/postgres.md,
 * "Several holders of one key"). A reader holds the key's advisory lock SHARED; a
 * holder of a group of up to N (`concurrency`) holds it SHARED too — so a writer
 * (the plain exclusive lock on the same advisory key) excludes both, and a writer
 * queued in the server holds new ones back — plus one of N slot locks (advisory
 * keys derived from the key: `slotBase # i`, i < N). A waiter of a group first takes
 * the key's gate (exclusive), so the groups' waiters of every process queue there
 * in order; newcomers try the gate shared for the length of their statement, so
 * they never pass a waiter that holds it. A reader that cannot join waits at the gate
 * too. Every holder also holds its shape's marker (readers one, a group of N
 * another), and is let in only while no other session holds a marker of another
 * shape: readers and groups, or groups of different limits, take turns.
 */
export interface ShapeStatements {
  /**
   * `$1` key, `$2` gate, `$3` shape marker → [token text or null, pid, …]: the key shared
   * while nobody holds the gate and no writer holds or waits, then the marker and the
   * shape check; nothing is kept when it is refused.
   */
  tryShared(lockKey: string, gateKey: string, markerKey: string): QueryArrayConfig;
  /** `$1` gate, `$2` shape marker → [token text or null, pid, …]: the gate's holder, a reader, joins the readers (the gate is let go) unless another shape is inside. */
  tryReader(gateKey: string, markerKey: string): QueryArrayConfig;
  /**
   * `$1` key, `$2` shape marker, `$3` gate, `$4` channel → [whether this session held
   * the key shared, whether it held the marker, …]: a waiter holds the gate, it is told.
   */
  unlockShared(lockKey: string, markerKey: string, gateKey: string, channel: string): QueryArrayConfig;
  /**
   * `$1` key, `$2` gate, `$3` slot base, `$4` N, `$5` slots this session may hold
   * already (advisory locks stack on one session, so such a slot would look free),
   * `$6` shape marker → [slot or null, token text or null, pid, …]: the key shared and
   * a free slot, only while nobody holds the gate and no writer holds or waits, then
   * the marker and the shape check; nothing is kept when it is refused.
   */
  tryGroup(lockKey: string, gateKey: string, slotBase: string, limit: number, held: number[], markerKey: string): QueryArrayConfig;
  /** `$1` key, `$2` gate, `$3` lock_timeout → [pid]: waits for the gate, then for the key shared. */
  lockGate(lockKey: string, gateKey: string, lockTimeout: string): QueryArrayConfig;
  /** `$1` gate, `$2` slot base, `$3` N, `$4` slots held here, `$5` shape marker → [slot or null, token text or null, pid, …]: with a free slot and no other shape inside, the gate is let go. */
  trySlot(gateKey: string, slotBase: string, limit: number, held: number[], markerKey: string): QueryArrayConfig;
  /** `$1` key, `$2` gate → [whether the gate was held, whether the key was held shared]: a waiter gives up. */
  leaveGate(lockKey: string, gateKey: string): QueryArrayConfig;
  /** `$1` key, `$2` slot, `$3` channel, `$4` shape marker → [whether the slot, the key shared and the marker were held, …]; tells the gate's holder. */
  unlockGroup(lockKey: string, slotKey: string, channel: string, markerKey: string): QueryArrayConfig;
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
  const waitMark = `($1::bigint >> 32)::int, (($1::bigint << 32) >> 32)::int`;
  // A wait takes its mark with up to 40 tries, a short sleep apart (0.2 ms asked, about
  // 1 ms on a Linux server; the sleep names the row, or it would run once for all): a check
  // (`unlockIfWaited`, a shared try's nobodyWaits) holds the mark exclusive for its
  // statement's length, and a wait that gave up at the first try stayed hidden for its
  // whole length (test/postgres/postgres-strict-wait-mark.e2e-spec.ts, "a wait that
  // starts while a check holds the mark"). Never a blocking lock: an application's own
  // two-int4 lock on the same bits delays a wait by about 40 ms and then only hides it
  // from strict hand-off, it never stalls it.
  const markWait =
    `(SELECT g.i FROM generate_series(1, 40) AS g(i) WHERE CASE WHEN pg_try_advisory_xact_lock_shared(${waitMark}) THEN true ` +
    `ELSE (SELECT false FROM pg_sleep(0.0002 + 0 * g.i)) END LIMIT 1)`;
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
    `SELECT pg_advisory_lock($1::bigint) FROM (SELECT set_config('lock_timeout', $2, true), ${markWait} OFFSET 0) AS wait OFFSET 0` +
    `) AS locked OFFSET 0) AS granted`;
  const lastDrawn = `pg_sequence_last_value('${sequence.replace(/'/g, "''")}'::regclass)`;
  // Every try first tries the key's gate shared, for its statement: a group's waiter
  // granted the gate has not asked for the key yet in that instant, and a try that
  // looked at the key alone would pass it (models/postgres-holders.pml, P8). Nobody
  // holds the gate of a key that has no group waiting: the look always succeeds there.
  const gateFree = (lockKey: string) => `pg_try_advisory_xact_lock_shared(${lockKey} # ${GATE_MASK}::bigint)`;
  const tryText = `SELECT CASE WHEN ${gateFree('$1::bigint')} THEN CASE WHEN pg_try_advisory_lock($1::bigint) THEN CASE WHEN ${lastDrawn} = $2::bigint THEN $3::text ELSE ${nextToken} END END END, pg_backend_pid()`;
  const unlockText = 'SELECT pg_advisory_unlock($1::bigint)';
  // Another session waits for the key iff its lock statement holds the wait mark: the
  // exclusive try fails then. (Asking pg_locks instead reads every lock of the server:
  // 16 ms a hand-off with 10,000 keys held.) A wait that begins after this statement is
  // an arrival after the hand-off, as strict order wants.
  const unlockIfWaitedText = `SELECT CASE WHEN pg_try_advisory_xact_lock(${waitMark}) THEN NULL ELSE pg_advisory_unlock($1::bigint) END`;
  // unnest WITH ORDINALITY: one row per key, in order, each evaluated as the single statement would.
  const tryManyText = `SELECT t.i, CASE WHEN ${gateFree('t.k')} THEN CASE WHEN pg_try_advisory_lock(t.k) THEN ${nextToken} END END, pg_backend_pid() FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, i)`;
  const unlockManyText = 'SELECT t.i, pg_advisory_unlock(t.k) FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, i)';
  // A key set: the recursive term tries the next key only while every one before it was
  // taken (a try never waits, so the order only keeps the set from taking keys past a
  // busy one); `got` counts those taken. All taken: the first token is the offer or a
  // draw, and the set's other keys take the next ones of that block (the caller makes
  // sure the block holds them all). Otherwise the keys taken are unlocked by the same
  // statement (CASE evaluates lazily, so either branch runs only when chosen).
  const trySetText =
    'WITH RECURSIVE r(i, ok) AS (SELECT 0, true UNION ALL ' +
    `SELECT r.i + 1, CASE WHEN ${gateFree('($1::bigint[])[r.i + 1]')} THEN pg_try_advisory_lock(($1::bigint[])[r.i + 1]) ELSE false END ` +
    'FROM r WHERE r.ok AND r.i < cardinality($1::bigint[])) ' +
    `SELECT CASE WHEN s.got = cardinality($1::bigint[]) THEN CASE WHEN ${lastDrawn} = $2::bigint THEN $3::text ELSE ${nextToken} END ` +
    'WHEN (SELECT count(pg_advisory_unlock(u.k)) FROM unnest(($1::bigint[])[1:s.got]) AS u(k)) >= 0 THEN NULL END, ' +
    's.got, pg_backend_pid() FROM (SELECT (count(*) FILTER (WHERE r.i > 0 AND r.ok))::int AS got FROM r) AS s';
  // PostgreSQL truncates statement names to 63 bytes (and pg warns on every use):
  // the sequence goes in as a short digest, which keeps names distinct per sequence.
  const digest = createHash('sha256').update(fencingSequence).digest('hex').slice(0, 16);
  const name = (what: string) => `nestjs-serialized:${what}:${digest}`;
  const shapes = shapeStatements(nextToken, waitMark, markWait, name);
  return {
    shapes,
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
    trySet: (lockKeys, offer) => ({
      name: name('try-set'),
      text: trySetText,
      values: [lockKeys, offer?.drawn ?? null, offer?.token ?? null],
      rowMode: 'array',
    }),
  };
}

/** The statements of holders sharing a key (see `ShapeStatements`). */
function shapeStatements(nextToken: string, waitMark: string, markWait: string, name: (what: string) => string): ShapeStatements {
  // A session already holding the key shared is granted it again at once, past a writer
  // queued in the server (advisory locks stack per session): so a try first makes sure
  // nobody waits — no session holds the wait mark, which every wait holds while it waits.
  const nobodyWaits = `pg_try_advisory_xact_lock(${waitMark})`;
  // The gate, tried shared for the statement's length: a try never passes a waiter that holds it.
  const gateFree = (gate: string) => `pg_try_advisory_xact_lock_shared(${gate}::bigint)`;
  // The shape check. Every holder holds its shape's two digit marks and the key's
  // presence mark, shared (`markKeysOf`: `$m` is the mark id, `block | shape`); a
  // statement takes its own first, then looks, cheapest first:
  // - no other session on the presence mark (an exclusive try, given back at once):
  //   nobody else is inside;
  // - else none of the 62 marks of the other digit values held (each tried exclusive
  //   and given back at once): nobody of another shape is inside;
  // - else, as such a try also fails while another statement's try holds the mark for
  //   that instant, pg_locks decides: another session holding a mark of another digit
  //   value. That read covers the server's whole lock table, so it runs only when the
  //   tries could not tell (read on every grant, a group's acquire + release took 6 ms
  //   with 5,000 other locks on the server; docs/providers/postgres.md, "Several holders
  //   of one key", has the figures).
  // Of two statements of different shapes, the later look sees the earlier take, so two
  // shapes are never inside together; the session's own locks do not count (as for any
  // lock conflict): in one process the local line keeps shapes apart.
  const block = (mark: string) => `(${mark}::bigint & -1024)`;
  const digitMark = (mark: string, digit: 0 | 1) =>
    digit === 0 ? `(${block(mark)} | (${mark}::bigint & 31))` : `(${block(mark)} | (32 + ((${mark}::bigint & 1023) >> 5)))`;
  const presence = (mark: string) => `(${block(mark)} | 1023)`;
  const freeNow = (lockKey: string) => `CASE WHEN pg_try_advisory_lock(${lockKey}) THEN pg_advisory_unlock(${lockKey}) ELSE false END`;
  const otherDigit = (mark: string) => `(${block(mark)} | (g.d * 32 + h.v))`;
  // Both reads name `y.m` (the marks are taken), so each runs for its row, after the take, and only when reached.
  const otherShapeInside = (mark: string) =>
    `CASE WHEN ${freeNow(presence(mark))} THEN false ` +
    `WHEN (SELECT bool_and(${freeNow(otherDigit(mark))}) FROM generate_series(0, 1) AS g(d), generate_series(0, 31) AS h(v) ` +
    `WHERE y.m AND h.v <> CASE WHEN g.d = 0 THEN ${mark}::bigint & 31 ELSE (${mark}::bigint & 1023) >> 5 END) THEN false ` +
    `ELSE EXISTS (SELECT 1 FROM pg_locks l WHERE y.m AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid() ` +
    `AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()) ` +
    `AND l.classid = ((${mark}::bigint >> 32) & 4294967295)::oid ` +
    `AND l.objid::bigint BETWEEN (${block(mark)} & 4294967295) AND (${block(mark)} & 4294967295) + 63 ` +
    `AND l.objid::bigint <> (${digitMark(mark, 0)} & 4294967295) AND l.objid::bigint <> (${digitMark(mark, 1)} & 4294967295)) END`;
  // `took`: what the statement took so far; then the marks (held exclusive only for an
  // instant by a look, so each is waited for), then the look. Each level is a subquery
  // that is never flattened, so the look runs after the take.
  const takeMarks = (mark: string) =>
    [digitMark(mark, 0), digitMark(mark, 1), presence(mark)].map((key) => `(pg_advisory_lock_shared(${key}) IS NOT NULL)`).join(' AND ');
  const markerThenLook = (inner: string, columns: string, took: string, mark: string) =>
    `SELECT ${columns}, y.m, CASE WHEN y.m THEN NOT (${otherShapeInside(mark)}) ELSE false END AS inside FROM (` +
    `SELECT ${columns}, CASE WHEN ${took} THEN ${takeMarks(mark)} ELSE false END AS m FROM (${inner}) AS x OFFSET 0` +
    `) AS y OFFSET 0`;
  // What a refused statement gives back of its marks (three columns, each always evaluated).
  const giveBackMarks = (mark: string, when: string) =>
    [digitMark(mark, 0), digitMark(mark, 1), presence(mark)]
      .map((key) => `CASE WHEN ${when} THEN pg_advisory_unlock_shared(${key}) END`)
      .join(', ');
  const marksBack = (mark: string) => giveBackMarks(mark, 'z.m AND NOT z.inside');
  // The first step of a try of either shape: the key shared, only while nobody holds the gate and nobody waits.
  const keySharedIfFree = `SELECT CASE WHEN ${gateFree('$2')} AND ${nobodyWaits} THEN pg_try_advisory_lock_shared($1::bigint) ELSE false END AS ok OFFSET 0`;
  // tryShared: the key shared (the gate free, nobody waiting), the marker, the look; refused, the key and the marker go back.
  const tryShared =
    `SELECT CASE WHEN z.inside THEN ${nextToken} END, pg_backend_pid(), ` +
    `CASE WHEN z.ok AND NOT z.inside THEN pg_advisory_unlock_shared($1::bigint) END, ${marksBack('$3')} FROM (` +
    markerThenLook(keySharedIfFree, 'ok', 'ok', '$3') +
    `) AS z`;
  // tryReader: the gate's holder holds the key shared already; the marker, the look; inside, it lets the gate go.
  const tryReader =
    `SELECT CASE WHEN z.inside THEN ${nextToken} END, pg_backend_pid(), ` +
    `CASE WHEN z.inside THEN pg_advisory_unlock($1::bigint) END, ${marksBack('$2')} FROM (` +
    markerThenLook('SELECT true AS ok', 'ok', 'ok', '$2') +
    `) AS z`;
  // The first free slot: rows are pulled one at a time and LIMIT stops at the first
  // slot taken, so a slot is taken only if it is the one returned. CASE keeps every
  // step lazy: no slot is tried without the key, no key is taken with the gate held.
  const freeSlot = (base: string, limit: string, held: string, guard: string) =>
    `(SELECT g.i FROM generate_series(0, ${limit}::int - 1) AS g(i) WHERE CASE WHEN ${guard} AND NOT (g.i = ANY(${held}::int[])) ` +
    `THEN pg_try_advisory_lock(${base}::bigint # g.i::bigint) ELSE false END LIMIT 1)`;
  // tryGroup: the key shared and a slot, the marker, the look; refused, all of it goes back.
  const tryGroup =
    `SELECT CASE WHEN z.inside THEN z.slot END, CASE WHEN z.inside THEN ${nextToken} END, pg_backend_pid(), ` +
    `CASE WHEN z.ok AND NOT z.inside THEN pg_advisory_unlock_shared($1::bigint) END, ` +
    `CASE WHEN z.slot IS NOT NULL AND NOT z.inside THEN pg_advisory_unlock($3::bigint # z.slot::bigint) END, ${marksBack('$6')} FROM (` +
    markerThenLook(
      `SELECT a.ok, CASE WHEN a.ok THEN ${freeSlot('$3', '$4', '$5', 'a.ok')} END AS slot FROM (` + keySharedIfFree + `) AS a OFFSET 0`,
      'ok, slot',
      'slot IS NOT NULL',
      '$6',
    ) +
    `) AS z`;
  const lockGate =
    `SELECT pg_backend_pid() FROM (` +
    `SELECT set_config('lock_timeout', '0', true) FROM (` +
    `SELECT pg_advisory_lock_shared($1::bigint) FROM (` +
    `SELECT pg_advisory_lock($2::bigint) FROM (SELECT set_config('lock_timeout', $3, true), ${markWait} OFFSET 0) AS wait OFFSET 0` +
    `) AS gate OFFSET 0) AS locked OFFSET 0) AS granted`;
  // trySlot: the gate's holder holds the key shared already; a slot, the marker, the look; refused, the slot and the marker go back.
  const trySlot =
    `SELECT CASE WHEN z.inside THEN z.slot END, CASE WHEN z.inside THEN ${nextToken} END, pg_backend_pid(), ` +
    `CASE WHEN z.inside THEN pg_advisory_unlock($1::bigint) END, ` +
    `CASE WHEN z.slot IS NOT NULL AND NOT z.inside THEN pg_advisory_unlock($2::bigint # z.slot::bigint) END, ${marksBack('$5')} FROM (` +
    markerThenLook(`SELECT ${freeSlot('$2', '$3', '$4', 'true')} AS slot OFFSET 0`, 'slot', 'slot IS NOT NULL', '$5') +
    `) AS z`;
  const leaveGate = 'SELECT pg_advisory_unlock($2::bigint), pg_advisory_unlock_shared($1::bigint)';
  // A reader tells the gate's holder only when there is one (the gate's shared try fails):
  // a group waiting for the readers to leave then looks at once, and readers alone pay no NOTIFY.
  const unlockShared =
    `SELECT pg_advisory_unlock_shared($1::bigint), ${giveBackMarks('$2', 'true')}, ` +
    "CASE WHEN pg_try_advisory_xact_lock_shared($3::bigint) THEN NULL ELSE pg_notify($4, '') END";
  const unlockGroup = `SELECT pg_advisory_unlock($2::bigint), pg_advisory_unlock_shared($1::bigint), ${giveBackMarks('$4', 'true')}, pg_notify($3, '')`;
  const config = (what: string, text: string, values: unknown[]): QueryArrayConfig => ({
    name: name(what),
    text,
    values,
    rowMode: 'array',
  });
  return {
    tryShared: (lockKey, gateKey, markerKey) => config('try-shared', tryShared, [lockKey, gateKey, markerKey]),
    tryReader: (gateKey, markerKey) => config('try-reader', tryReader, [gateKey, markerKey]),
    unlockShared: (lockKey, markerKey, gateKey, channel) => config('unlock-shared', unlockShared, [lockKey, markerKey, gateKey, channel]),
    tryGroup: (lockKey, gateKey, slotBase, limit, held, markerKey) =>
      config('try-group', tryGroup, [lockKey, gateKey, slotBase, limit, held, markerKey]),
    lockGate: (lockKey, gateKey, lockTimeout) => config('lock-gate', lockGate, [lockKey, gateKey, lockTimeout]),
    trySlot: (gateKey, slotBase, limit, held, markerKey) => config('try-slot', trySlot, [gateKey, slotBase, limit, held, markerKey]),
    leaveGate: (lockKey, gateKey) => config('leave-gate', leaveGate, [lockKey, gateKey]),
    unlockGroup: (lockKey, slotKey, channel, markerKey) => config('unlock-group', unlockGroup, [lockKey, slotKey, channel, markerKey]),
  };
}
