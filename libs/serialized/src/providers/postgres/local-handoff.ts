import type { HeldLocks } from '../../internal/held-locks';
import type { KeyedWaitQueue } from '../../internal/keyed-wait-queue';
import type { LockConnection } from './lock-connection';
import type { PostgresLock } from './postgres-lock';

/**
 * How a holder may pass its key to the next caller of its process (lock cohorting):
 * `cohort` serves up to `maxLocalHandoffs` callers of this process in a row even
 * when another process is known to wait; `strict` hands off locally only while no
 * other process was seen waiting when the key came from the server.
 */
export type HandoffMode = 'strict' | 'cohort';

/** Local hand-offs in a row before the key goes back to the server (the documented default). */
export const DEFAULT_MAX_LOCAL_HANDOFFS = 32;

/** The run of local holders one server grant started: shared by every holder of that run. */
export interface Cohort {
  /** The last fencing token of the block the grant's `nextval` reserved. */
  readonly blockEnd: bigint;
  /** Whether other sessions waited for the key when the server granted it. */
  readonly othersWaiting: boolean;
  readonly mode: HandoffMode;
}

/** A server lock on its way from a releasing holder to the next local caller. */
export interface HandedLock {
  readonly key: string;
  readonly lockKey: string;
  readonly connection: LockConnection;
  /** The token of the holder that let go. */
  readonly token: bigint;
  readonly cohort: Cohort;
  /** Local hand-offs so far in this run, this one included. */
  readonly handoffs: number;
}

/** What hand-offs need of the provider. */
export interface LocalHandoffHost {
  readonly queue: KeyedWaitQueue;
  readonly held: HeldLocks<PostgresLock>;
  readonly maxLocalHandoffs: number;
  grant(key: string, fencingToken: bigint, lockKey: string, connection: LockConnection, cohort: Cohort, handoffs: number): PostgresLock;
  /** Unlocks on the server, then frees the key in this process. */
  unlockHanded(handed: HandedLock): void;
}

/**
 * Local hand-off (lock cohorting, Dice, Marathe & Shavit, PPoPP 2012): when a
 * holder releases a key that a caller of this process waits for, the server lock
 * stays on its session and passes to that caller in-process, with the next token
 * of the block the grant reserved — no unlock and lock round trips. After
 * `maxLocalHandoffs` in a row (or when the block runs out) the key goes back to
 * the server, whose queue then serves the other processes' sessions first.
 */
export class LocalHandoffs {
  private readonly pending = new Map<string, HandedLock>();

  constructor(private readonly host: LocalHandoffHost) {}

  /**
   * Called by release: passes `lock`'s server lock to the next caller of its key in
   * this process and returns true, or returns false (unlock on the server as usual).
   */
  offer(lock: PostgresLock, handoffs: number): boolean {
    const { cohort, connection } = lock;
    if (!cohort || handoffs >= this.host.maxLocalHandoffs || lock.fencingToken >= cohort.blockEnd) return false;
    if (cohort.mode === 'strict' && cohort.othersWaiting) return false;
    if (lock.lost || connection.dead || this.host.held.closing || this.host.queue.waiting(lock.key) === 0) return false;
    connection.holders.delete(lock);
    this.pending.set(lock.key, { key: lock.key, lockKey: lock.lockKey, connection, token: lock.fencingToken, cohort, handoffs: handoffs + 1 });
    // The head of the local queue now owns the key; it picks the lock up with `take`.
    this.host.queue.release(lock.key);
    this.host.held.delete(lock);
    return true;
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
   * server again).
   */
  grant(handed: HandedLock): PostgresLock | undefined {
    if (handed.connection.dead) return undefined;
    return this.host.grant(handed.key, handed.token + 1n, handed.lockKey, handed.connection, handed.cohort, handed.handoffs);
  }

  /** The caller whose turn came gave up (aborted, shutdown): the lock goes to the next caller, or back to the server. */
  passOn(handed: HandedLock): void {
    if (!handed.connection.dead && !this.host.held.closing && this.host.queue.waiting(handed.key) > 0) {
      this.pending.set(handed.key, handed);
      this.host.queue.release(handed.key);
      return;
    }
    this.host.unlockHanded(handed);
  }
}
