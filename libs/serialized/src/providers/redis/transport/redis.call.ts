import type { RedisClient } from './redis.client';

/**
 * How one command is sent. Why an interface: most calls pass a shared constant
 * (`URGENT`, `RELEASE`); a waiter passes itself, so that `skip()` reads its own
 * state with no object made per call.
 */
export interface RedisCallOptions {
  /**
   * Sent ahead of the other commands waiting in this process (never ahead of what
   * is already on the wire): releases, renewals, heart-beats and leaves, which keep
   * locks and places alive and free keys, go before new acquisitions.
   */
  readonly urgent?: boolean;
  /**
   * Its write may wait, so that what this process sends after it meanwhile leaves
   * in the same system call (order on the connection is unchanged): until the end
   * of the current turn of JavaScript (`'turn'`: a release with nothing else held,
   * whose caller's next command follows in the same turn), or of the event-loop
   * iteration (`'iteration'`: a release while the process holds other locks, a busy
   * server, whose other requests read in the same iteration send their acquisitions).
   */
  readonly sharesWrite?: 'turn' | 'iteration';
  /**
   * Asked just before the command would be sent: `true` drops it unsent (its
   * caller gave up meanwhile); the call then fails with an error for which
   * `RedisConnection.mayHaveRun` is `false`.
   */
  skip?(): boolean;
}

/** Options of the commands that keep locks and places alive or free keys. */
export const URGENT: RedisCallOptions = { urgent: true };

/** Options of a release nobody is known to wait for while other locks are held: urgent, and its write shared with what this process sends until the end of the event-loop iteration. */
export const RELEASE: RedisCallOptions = { urgent: true, sharesWrite: 'iteration' };

/** Options of a release nobody is known to wait for with no other lock held: urgent, and its write shared with what this process sends until the end of the current turn (the caller's next acquisition). */
export const LONE_RELEASE: RedisCallOptions = { urgent: true, sharesWrite: 'turn' };

/** A command whose caller waits: queued in this process, or on the wire. */
export interface Call {
  readonly key: string;
  /** From when its silence bound counts, on the connection's lag-free clock. */
  readonly since: number;
  /** Sends it; dropped once sent. */
  send: ((client: RedisClient) => Promise<unknown>) | undefined;
  /** Asked just before it is sent (see {@link RedisCallOptions.skip}). */
  readonly options: RedisCallOptions | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Its caller has its answer (the reply, or a failure). */
  done: boolean;
}
