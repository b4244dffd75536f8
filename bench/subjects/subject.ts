/** Where a subject keeps its locks. */
export type Backend = 'memory' | 'redis' | 'postgres' | 'mysql';

/** This library, a library users pick instead, or the bare backend calls nothing can beat. */
export type SubjectKind = 'ours' | 'peer' | 'floor';

/** What a subject needs to connect: service URLs and a key namespace of this run. */
export interface SubjectContext {
  redisUrl: string;
  databaseUrl: string;
  mysqlUrl: string;
  /** Prefix of every key this subject creates (cleaned up after the run). */
  prefix: string;
}

/** One contender, as its users would set it up. */
export interface SubjectSpec {
  /** Stable id used in results (`ours`, `redlock-10ms`, …). */
  id: string;
  label: string;
  kind: SubjectKind;
  backend: Backend;
  /** The settings used, for the report. */
  settings: string;
  /**
   * Whether callers can wait for a busy key. The physical floors cannot: they are
   * one connection doing nothing but the two commands, so they only run uncontended.
   */
  canWait: boolean;
  /** Server connections it opens for `concurrency` simultaneous callers in one process. */
  connectionsFor?(concurrency: number): number;
  open(context: SubjectContext): Promise<LockSubject>;
}

/**
 * An opened subject: run `fn` holding `key`, released as soon as `fn` returns (or
 * the promise it returns settles). The benchmarks' critical sections are
 * synchronous except where a key must stay held (the memory scenario).
 */
export interface LockSubject {
  withLock(key: string, fn: () => void | Promise<void>): Promise<void>;
  /**
   * Run `fn` holding every key of `keys` together (scenario 7: a transfer between two
   * accounts), the way its users would: the library's own multi-key call where it has
   * one, else nested single-key locks taken in sorted order (what avoids a deadlock
   * between A→B and B→A). Absent on subjects that cannot wait (the floors).
   */
  withLocks?(keys: readonly string[], fn: () => void | Promise<void>): Promise<void>;
  /**
   * Scenario 8: run `fn` holding one of `permits` places of `key` (at most `permits`
   * callers of the key at once). Absent on subjects with no such lock.
   */
  withPermit?(key: string, permits: number, fn: () => void | Promise<void>): Promise<void>;
  /**
   * Scenario 8: run `fn` holding `key` beside other readers (a writer takes
   * `withLock`). Absent on a plain mutex, whose readers hold the key alone.
   */
  withShared?(key: string, fn: () => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/**
 * Holds `keys` one after another in sorted order through `withLock`, innermost last:
 * the nesting users write when their lock has no multi-key call. Sorting is what keeps
 * two opposite transfers (A→B, B→A) from deadlocking.
 */
export function nestedInSortedOrder(
  withLock: (key: string, fn: () => void | Promise<void>) => Promise<void>,
  keys: readonly string[],
  fn: () => void | Promise<void>,
): Promise<void> {
  const sorted = [...new Set(keys)].sort();
  const enter = (i: number): Promise<void> => (i === sorted.length ? Promise.resolve(fn()) : withLock(sorted[i], () => enter(i + 1)));
  return enter(0);
}

/**
 * What a hand-rolled SQL peer of scenario 7 does with its backend
 * ({@link nestedOnOneSession}): a session from its pool and one lock per key on it.
 */
export interface SessionLocks<S> {
  /** The backend's name (MySQL) or key (PostgreSQL) of the lock on `key`. */
  name(key: string): string;
  /** A session from the pool. */
  session(): Promise<S>;
  /** Takes `name` on `session`, waiting for it; rejects when the backend does not grant it. */
  lock(session: S, name: string): Promise<void>;
  /** Releases `name` on `session`; false when the backend says `session` did not hold it. */
  unlock(session: S, name: string): Promise<boolean>;
  /** Gives `session` back to its pool, or (`broken`: an unlock failed, a lock may be left on it) discards it. */
  giveBack(session: S, broken: boolean): void;
  /** The message of the error thrown when an unlock returns false. */
  readonly unlockFailed: string;
}

/**
 * `withLocks` as users of a SQL backend write it for a transfer: one session of the
 * pool, a lock on each key in sorted order (sorting avoids the A→B / B→A deadlock),
 * the work, the unlocks in reverse order (each result checked), the session back to
 * the pool. One copy for the MySQL and PostgreSQL peers, so the two do the same.
 */
export function nestedOnOneSession<S>(
  backend: SessionLocks<S>,
): (keys: readonly string[], fn: () => void | Promise<void>) => Promise<void> {
  return async (keys, fn) => {
    const names = [...new Set(keys)].sort().map((key) => backend.name(key));
    const session = await backend.session();
    const held: string[] = [];
    try {
      for (const name of names) {
        await backend.lock(session, name);
        held.push(name);
      }
      await fn();
    } finally {
      for (const name of held.reverse()) {
        if (!(await backend.unlock(session, name))) {
          backend.giveBack(session, true);
          // eslint-disable-next-line no-unsafe-finally -- deliberate: an unlock that failed is the finding
          throw new Error(backend.unlockFailed);
        }
      }
      backend.giveBack(session, false);
    }
  };
}
