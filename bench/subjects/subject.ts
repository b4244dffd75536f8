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
