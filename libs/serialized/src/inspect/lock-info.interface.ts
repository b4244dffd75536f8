/**
 * One holder of a key, as {@link LockInfo} lists it. Which fields are present
 * depends on what the backend keeps (docs/observability.md, "Who holds my key?").
 */
export interface LockHolderInfo {
  /**
   * Its fencing token: always for a holder of this process; for another process's
   * only where the backend keeps it (Redis, beside the owner token in the lock key).
   * On Redis that is the token as Redis last heard of it: after a local hand-off in
   * the holder's process (the key passed in-process, nothing sent), the previous
   * holder's token until the new holder's first renewal (a third of its lease at
   * most).
   */
  fencingToken?: bigint;
  /** Whether the holder is a caller of this process (this provider, or this app's transaction mode). */
  here: boolean;
  /**
   * Which instance holds it, where the backend knows: PostgreSQL, the holding
   * session's `application_name` and backend pid (`<application_name>#<pid>`);
   * Redis, the holder's provider session (the first part of its owner token);
   * MySQL, the holding session's connection id (`mysql#<id>`).
   */
  instance?: string;
  /**
   * Whether it holds the key `shared` (a reader); `false` for a holder alone or one of
   * a `concurrency` group. On PostgreSQL another process's reader is told from a group
   * member by the readers' shape marks its session holds.
   */
  shared?: boolean;
  /** How long it has held the key, where known (holders of this process). */
  heldForMs?: number;
  /** What is left of its lease, where a lease applies (Redis). */
  leaseRemainingMs?: number;
}

/**
 * What `LockService.inspect(key)` found: who holds `key`, and how many wait for
 * it here and, where the backend can tell, everywhere. A snapshot: by the time it
 * is read the key may have moved on.
 */
export interface LockInfo {
  /** The key as given to `inspect` (without the provider's `keyPrefix`). */
  key: string;
  /** Its holders, this process's first; empty when the key is free. */
  holders: LockHolderInfo[];
  /**
   * Callers waiting for the key in every process, where the backend can tell:
   * Redis, every waiting caller of every process; PostgreSQL, `waitingHere` plus
   * one for each other process's session waiting in the server (a process waits
   * with one session per key, so this is a lower bound); MySQL, `waitingHere` plus
   * the other sessions waiting in `GET_LOCK` in the server's process list;
   * in-memory, `waitingHere`.
   */
  waiting?: number;
  /** Callers of this process waiting for the key (the holder not counted). */
  waitingHere: number;
}
