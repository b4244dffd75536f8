import type { HandOffMode } from '../../acquire-options.interface';
import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import type { PgPoolLike } from '../../peer-clients.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';

/** Options of `PostgresLockProvider`; module options fill them in. */
export interface PostgresLockProviderOptions extends LockProviderCommonOptions {
  /** `postgres://` URL of the database the locks live in. */
  connectionString?: string;
  /**
   * A `pg.Pool` the app already has. Only its connection settings (`pool.options`)
   * are used, to open a small lock pool of the library's own; the app's pool is
   * never used for locks and never ended by the library.
   */
  pool?: PgPoolLike;
  /** Lock sessions per process (default 10): distinct keys held or waited for in PostgreSQL at once. */
  lockPoolSize?: number;
  /** Sets how often held sessions are checked: every min(leaseMs / 3, 1 s) (default lease 30 000 ms). */
  leaseMs?: number;
  /** Bound on opening a lock session before `LockBackendError` (default 3000 ms). */
  connectTimeoutMs?: number;
  /**
   * How long a lock session may leave a statement or a liveness ping unanswered
   * before it counts as lost (default 10 000 ms): the connection is then closed,
   * which frees its locks on the server, and each holder's `signal` aborts with
   * `LockLostError`. A slow path is not a lost session: PostgreSQL keeps a session
   * lock however slow the network is, so this only bounds how long a path that
   * went silent goes unnoticed. Time our own event loop spent blocked is not
   * counted. A closed or reset socket, or the server ending the session, is
   * noticed at once whatever this is. Keep it well below `leaseMs` so a holder
   * learns of a dead path before the server frees the lock (server keepalive).
   */
  sessionTimeoutMs?: number;
  /** `application_name` of the lock sessions (default `nestjs-serialized:<keyPrefix>`, cut to 63 bytes). */
  applicationName?: string;
  /**
   * Sequence fencing tokens are drawn from (default `nestjs_serialized_fencing_token`,
   * `schema.name` accepted). Created on first connection if missing; a role that may
   * not create it needs it created once beforehand.
   */
  fencingSequence?: string;
  /** Idle lock sessions are closed after this long (default 10 000 ms). */
  idleTimeoutMs?: number;
  /**
   * Create what the library keeps in the database when it is missing (default
   * true): the fencing sequence and `@Idempotent`'s table. Off for a role that may
   * not run DDL; create them beforehand with the SQL in docs/providers/postgres.md.
   */
  createSchema?: boolean;
  /** Table of `@Idempotent`'s records (default `nestjs_serialized_idempotency`, `schema.name` accepted). */
  idempotencyTable?: string;
  /**
   * Local hand-off (default `'strict'`, arrival order, as on Redis): a holder whose key
   * a caller of this process waits for passes the server lock to it in-process only
   * while no other session waits for the key in the server (one statement per release
   * checks it). `'cohort'` (opt-in) passes it on even then, up to `maxLocalHandOffs` in
   * a row. See docs/providers/postgres.md.
   */
  handoff?: HandOffMode;
  /** Local hand-offs in a row before the key goes back to the server (default 32; 0: never hand off locally). */
  maxLocalHandOffs?: number;
}

/** How held sessions are watched, from `leaseMs` and `sessionTimeoutMs`. */
export interface SessionTimings {
  /** Time between liveness pings of one held session. */
  readonly pingEveryMs: number;
  /** Silence (in our own running time) after which a session counts as lost. */
  readonly sessionTimeoutMs: number;
  /**
   * Server-side TCP keepalive (idle and interval seconds; 3 probes): the server
   * ends the session of a vanished client, freeing its locks, within about a lease.
   */
  readonly keepaliveSeconds: number;
}

/** From options the constructor validated (config/provider-options.validator.ts). */
export function sessionTimings(options: Pick<PostgresLockProviderOptions, 'leaseMs' | 'sessionTimeoutMs'>): SessionTimings {
  const leaseMs = options.leaseMs ?? SERIALIZED_DEFAULTS.leaseMs;
  const sessionTimeoutMs = options.sessionTimeoutMs ?? SERIALIZED_DEFAULTS.pgSessionTimeoutMs;
  return {
    pingEveryMs: Math.max(50, Math.min(1000, Math.floor(leaseMs / 3))),
    sessionTimeoutMs,
    keepaliveSeconds: Math.max(1, Math.round(leaseMs / 4000)),
  };
}

/** The lock pool's size, from options the constructor validated. */
export function lockPoolSizeOf(options: Pick<PostgresLockProviderOptions, 'lockPoolSize'>): number {
  return options.lockPoolSize ?? SERIALIZED_DEFAULTS.pgLockPoolSize;
}

/** The default `application_name`, or the given one, cut to PostgreSQL's 63 bytes. */
export function lockApplicationName(options: Pick<PostgresLockProviderOptions, 'applicationName'>, keyPrefix: string): string {
  // By code points, so a cut never leaves half of a surrogate pair.
  const chars = Array.from(options.applicationName ?? `nestjs-serialized:${keyPrefix}`);
  while (Buffer.byteLength(chars.join(''), 'utf8') > 63) chars.pop();
  return chars.join('');
}
