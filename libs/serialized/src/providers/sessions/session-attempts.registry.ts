import type { LineCaller } from '../../local/line.caller';
import { HELD_ELSEWHERE, type PooledSession, type SessionGrant } from './lock-session.request';
import type { SessionLockAttempt } from './session-lock.attempt';

/** The layer's transition a caller goes through when it learns it waits behind another process (`LockLines.waitsBehind`). */
interface WaitsBehind {
  waitsBehind(key: string, maxPending: number, caller?: unknown): Error | undefined;
}

/**
 * The session attempts of one provider in flight, at most one per key (the layer
 * lets one caller per key and process ask at a time), each kept until it is over
 * server side included: the next caller of its key waits for that
 * (`windingDown`), shutdown aborts them and waits for them, and the PostgreSQL
 * session audit counts their keys as owned. It also runs an attempt's two parts
 * in order — the try, then, if the caller may wait, the wait — for the
 * PostgreSQL and MySQL backends alike.
 */
export class SessionAttempts<C extends PooledSession, A extends SessionLockAttempt<C>> {
  private readonly byKey = new Map<string, A>();
  /** Attempts of callers that hold a key beside others (several per key at once, see `runBeside`). */
  private readonly beside = new Set<A>();

  /**
   * Runs `attempt` for `caller`: resolves with the grant or `null` (a try found the
   * key busy), or rejects with the caller's error. A waiting caller whose try found
   * the key held elsewhere is counted as a waiter of this process first
   * (`lines.waitsBehind`), which may refuse it.
   */
  run(attempt: A, caller: Pick<LineCaller<unknown>, 'key' | 'maxPending'>, lines: WaitsBehind): Promise<SessionGrant<C> | null> {
    this.byKey.set(attempt.key, attempt);
    return attempt.start().then(
      (answer) => (answer === HELD_ELSEWHERE ? this.waitBehind(attempt, caller, lines) : this.ended(attempt, answer)),
      (error: unknown) => this.failed(attempt, error),
    );
  }

  /**
   * Runs `attempt` of a caller that holds its key beside others (`shared`,
   * `concurrency` > 1): as `run`, but several such attempts of one key may be in
   * flight at once (the layer lets up to the limit ask), and the next caller of the
   * key does not wait for one to wind down.
   */
  runBeside(attempt: A, caller: Pick<LineCaller<unknown>, 'key' | 'maxPending'>, lines: WaitsBehind): Promise<SessionGrant<C> | null> {
    this.beside.add(attempt);
    const forget = (): void => {
      if (attempt.over) this.beside.delete(attempt);
      else void attempt.done.then(() => this.beside.delete(attempt));
    };
    return attempt.start().then(
      (answer) => {
        if (answer !== HELD_ELSEWHERE) {
          forget();
          return answer;
        }
        const refused = lines.waitsBehind(caller.key, caller.maxPending, caller);
        if (refused !== undefined) {
          attempt.decline();
          forget();
          return Promise.reject(refused);
        }
        return attempt.waitBehind().then(
          (grant) => (forget(), grant),
          (error: unknown) => (forget(), Promise.reject(error)),
        );
      },
      (error: unknown) => (forget(), Promise.reject(error)),
    );
  }

  /** What the attempt of `key` still winds down (after an answer other than a grant), if it is not over. */
  windingDown(key: string): Promise<void> | undefined {
    return this.byKey.get(key)?.done;
  }

  /** The attempts in flight or winding down. */
  *values(): IterableIterator<A> {
    yield* this.byKey.values();
    yield* this.beside;
  }

  /** Shutdown: every attempt answers `error(key)` now. */
  abortAll(error: (key: string) => Error): void {
    for (const attempt of [...this.values()]) attempt.abort(error(attempt.key));
  }

  /** Resolves once every attempt is over, or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    await Promise.race([
      Promise.all([...this.values()].map((attempt) => attempt.done)),
      new Promise((resolve) => setTimeout(resolve, timeoutMs).unref()),
    ]);
  }

  private waitBehind(attempt: A, caller: Pick<LineCaller<unknown>, 'key' | 'maxPending'>, lines: WaitsBehind): Promise<SessionGrant<C>> {
    const refused = lines.waitsBehind(caller.key, caller.maxPending);
    if (refused !== undefined) {
      attempt.decline();
      return this.failed(attempt, refused);
    }
    return attempt.waitBehind().then(
      (grant) => this.ended(attempt, grant) as SessionGrant<C>,
      (error: unknown) => this.failed(attempt, error),
    );
  }

  private ended(attempt: A, answer: SessionGrant<C> | null): SessionGrant<C> | null {
    this.forget(attempt);
    return answer;
  }

  private failed(attempt: A, error: unknown): Promise<never> {
    this.forget(attempt);
    return Promise.reject(error);
  }

  /** The attempt leaves once it is over, server side included. */
  private forget(attempt: A): void {
    if (!attempt.over) {
      void attempt.done.then(() => this.forget(attempt));
      return;
    }
    if (this.byKey.get(attempt.key) === attempt) this.byKey.delete(attempt.key);
  }
}
