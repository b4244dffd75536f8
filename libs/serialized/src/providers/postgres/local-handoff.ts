import type { HandOffMode } from '../../acquire-options.interface';
import { LockLostError } from '../../errors';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { KEPT, unlockSession } from './held-session';
import type { LockConnection } from './lock-connection';
import type { PostgresLock } from './postgres-lock';
import type { LockSessions } from './lock-sessions';
import type { Cohort } from './handoff-cohort';

export type { Cohort } from './handoff-cohort';

/** A server lock on its way from a releasing holder to the next local caller. */
export interface HandedLock {
  readonly key: string;
  readonly lockKey: string;
  readonly connection: LockConnection;
  /** The token the next holder takes: reserved from the session's block when the holder let go. */
  readonly token: bigint;
  readonly cohort: Cohort;
  /** Local hand-offs so far in this run, this one included. */
  readonly handoffs: number;
}

/** The database side hand-offs use. */
export type HandoffSessions = Pick<LockSessions, 'pool' | 'statements'>;

/** What hand-offs ask of the key's state in this process (`ProcessLocks`, its only writer). */
export interface LocalHandoffHost {
  /** Callers of this process queued for `key`. */
  waiting(key: string): number;
  /** Whether shutdown began. */
  closing(): boolean;
  /** The key's turn passes to the next caller of this process (or the key goes idle here). */
  passTurn(key: string): void;
  /** A holder let go (its lock handed on or unlocked): forgotten, and the key's turn passes. */
  forget(lock: PostgresLock): void;
  /** Makes the caller whose turn came the holder of a handed lock. */
  grant(key: string, fencingToken: bigint, lockKey: string, connection: LockConnection, cohort: Cohort, handoffs: number): PostgresLock;
}

/**
 * Local hand-off (lock cohorting, Dice, Marathe & Shavit, PPoPP 2012): when a
 * holder releases a key that a caller of this process waits for, the server lock
 * stays on its session and passes to that caller in-process, with the next token
 * of its session's block (`SessionTokens`) — no unlock and lock round trips. After
 * `maxLocalHandOffs` in a row (or when the block runs out) the key goes back to
 * the server, whose queue then serves the other processes' sessions first.
 * `strict` asks the server at each release whether another session waits (one
 * statement that unlocks if so), and hands off locally only when none does.
 */
export class LocalHandoffs {
  private readonly pending = new Map<string, HandedLock>();

  private readonly mode: HandOffMode;
  private readonly max: number;

  /** @throws Error when `handoff` or `maxLocalHandOffs` is invalid */
  constructor(
    private readonly sessions: HandoffSessions,
    private readonly host: LocalHandoffHost,
    options: { handoff?: HandOffMode; maxLocalHandOffs?: number },
    private readonly warn: (message: string) => void,
  ) {
    this.mode = options.handoff ?? SERIALIZED_DEFAULTS.pgHandoff;
    this.max = options.maxLocalHandOffs ?? SERIALIZED_DEFAULTS.pgMaxLocalHandOffs;
    if (this.mode !== 'cohort' && this.mode !== 'strict') throw new Error(`handoff ${JSON.stringify(this.mode)} is invalid: expected 'strict' or 'cohort'`);
    if (!Number.isSafeInteger(this.max) || this.max < 0) throw new Error(`maxLocalHandOffs ${JSON.stringify(this.max)} is invalid: expected an integer ≥ 0`);
  }

  /** The run a server grant starts, or none when the session's sequence reserves no block (increment 1) or hand-offs are off. */
  cohortOf(connection: LockConnection, mode = this.mode): Cohort | undefined {
    if (connection.tokens.block < 2 || this.max < 1) return undefined;
    return { mode };
  }

  /** Releases a holder's lock: to the next caller of this process when it may, else on the server. */
  async release(lock: PostgresLock): Promise<void> {
    const { pool, statements } = this.sessions;
    let outcome: LockLostError | undefined | typeof KEPT;
    if (this.eligible(lock) && lock.cohort!.mode === 'cohort') return this.handOff(lock);
    try {
      // Strict: unlocks only if another session waits in the server, else keeps it for the local caller.
      outcome = await unlockSession(lock, pool, statements, this.eligible(lock));
      if (outcome === KEPT && this.eligible(lock)) return this.handOff(lock);
      // Kept, but its local caller left meanwhile: unlock after all.
      if (outcome === KEPT) outcome = await unlockSession(lock, pool, statements);
    } catch (error) {
      // Whatever happened, the lock is forgotten and the key freed in this process.
      this.host.forget(lock);
      throw error;
    }
    this.host.forget(lock);
    // A loss found at release is told (signal, `lost`) and logged once; the release itself succeeded in letting go.
    if (outcome instanceof LockLostError && !lock.lost) {
      lock.markLost(outcome);
      this.warn(outcome.message);
    }
  }

  /** The lock keys handed on this session and not yet taken (the session audit counts them as owned). */
  handedOn(connection: LockConnection): Set<string> {
    const keys = new Set<string>();
    for (const handed of this.pending.values()) if (handed.connection === connection) keys.add(handed.lockKey);
    return keys;
  }

  /** The caller whose turn came: the server lock handed to it, if one was. */
  take(key: string): HandedLock | undefined {
    const handed = this.pending.get(key);
    if (handed) this.pending.delete(key);
    return handed;
  }

  /**
   * Makes the caller a holder of the handed lock, or returns undefined when its
   * session ended on the way (the server freed the lock: the caller asks the
   * server again, after giving back the session's use).
   */
  grant(handed: HandedLock, mode?: HandOffMode): PostgresLock | undefined {
    if (handed.connection.dead) {
      this.sessions.pool.release(handed.connection);
      return undefined;
    }
    // The new holder's own mode, if it gave one, decides its release; the block and the count carry on.
    const cohort = mode && mode !== handed.cohort.mode ? { ...handed.cohort, mode } : handed.cohort;
    return this.host.grant(handed.key, handed.token, handed.lockKey, handed.connection, cohort, handed.handoffs);
  }

  /** The caller whose turn came gave up (aborted, shutdown): the lock goes to the next caller, or back to the server. */
  passOn(handed: HandedLock): void {
    if (!handed.connection.dead && !this.host.closing() && this.host.waiting(handed.key) > 0) {
      this.pending.set(handed.key, handed);
      this.host.passTurn(handed.key);
      return;
    }
    unlockSession(handed, this.sessions.pool, this.sessions.statements)
      .then((lost) => lost instanceof LockLostError && this.warn(lost.message))
      .finally(() => this.host.passTurn(handed.key));
  }

  private eligible(lock: PostgresLock): boolean {
    const { cohort, connection } = lock;
    if (!cohort || lock.handoffs >= this.max || !connection.tokens.available) return false;
    return !lock.lost && !connection.dead && !this.host.closing() && this.host.waiting(lock.key) > 0;
  }

  private handOff(lock: PostgresLock): void {
    const { connection } = lock;
    connection.letGo(lock);
    // The token is taken now, while the key is held: larger than every token this session gave before.
    const handed = { key: lock.key, lockKey: lock.lockKey, connection, token: connection.tokens.take()!, cohort: lock.cohort!, handoffs: lock.handoffs + 1 };
    this.pending.set(lock.key, handed);
    // The head of the local queue now owns the key; it picks the lock up with `take`.
    this.host.forget(lock);
  }
}
