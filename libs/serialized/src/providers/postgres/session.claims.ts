/**
 * What one lock session holds on the server, as this process's own statements tell
 * it: a lock is claimed when the statement that may take it is queued, and the
 * claim ends only when a reply proves the session does not hold it (a try that
 * found the key busy, an unlock's answer, a lock wait given back). Between the two
 * the claim stands, whatever the caller believes — so a lock the server granted
 * without anyone knowing (a wait that `lock_timeout` ended in the instant of the
 * grant) is claimed by nobody, and the session audit finds and frees it.
 *
 * Statements run in order on one session, so claims read when an audit statement is
 * sent describe every lock the server can show to that statement: each was granted
 * by a statement queued before it, and released ones were answered before it.
 *
 * Written only by `LockSession` (its lock statements and its audit).
 */
export class SessionClaims {
  /** Lock key → how many statements may have taken it and are not yet proven not to (advisory locks stack). */
  private readonly counts = new Map<string, number>();
  /** Lock key → the key as the caller named it (for the log line of an audit that finds a lock unowned). */
  private readonly names = new Map<string, string>();
  /** Lock keys with an unlock on its way: still claimed, and owned by the release in flight. */
  private readonly releasing = new Map<string, number>();

  /** Keys claimed now. */
  get size(): number {
    return this.counts.size;
  }

  claim(lockKey: string, key: string): void {
    this.counts.set(lockKey, (this.counts.get(lockKey) ?? 0) + 1);
    this.names.set(lockKey, key);
  }

  /** A reply proved one claim of `lockKey` holds nothing (any more). */
  drop(lockKey: string): void {
    const count = this.counts.get(lockKey);
    if (count === undefined) return;
    if (count > 1) return void this.counts.set(lockKey, count - 1);
    this.counts.delete(lockKey);
    this.names.delete(lockKey);
  }

  /** The keys claimed now (a copy). */
  keys(): Set<string> {
    return new Set(this.counts.keys());
  }

  /** The key a claim was made for (the audit's log names it). */
  nameOf(lockKey: string): string | undefined {
    return this.names.get(lockKey);
  }

  /** An unlock of `lockKey` was queued; `unlocked` when its reply came (whatever it said). */
  unlocking(lockKey: string): void {
    this.releasing.set(lockKey, (this.releasing.get(lockKey) ?? 0) + 1);
  }

  unlocked(lockKey: string): void {
    const count = this.releasing.get(lockKey) ?? 0;
    if (count > 1) this.releasing.set(lockKey, count - 1);
    else this.releasing.delete(lockKey);
  }

  /**
   * The claims someone stands behind: claimed, and either a release of it is in
   * flight or `owns` (the provider: a holder, a hand-off or an attempt on this
   * session) says it is theirs. A claim nobody stands behind is a lock the provider
   * forgot to give back.
   */
  owned(owns: (lockKey: string) => boolean): Set<string> {
    const owned = new Set<string>();
    for (const lockKey of this.counts.keys()) if (this.releasing.has(lockKey) || owns(lockKey)) owned.add(lockKey);
    return owned;
  }
}
