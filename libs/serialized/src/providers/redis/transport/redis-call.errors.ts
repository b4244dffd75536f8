import { LockBackendError } from '../../../errors/index';

/**
 * The connection's failures, all `LockBackendError`s naming the key. It also
 * remembers which of them belong to calls that never left this process: their
 * commands did not run, so there is nothing to undo in Redis.
 */
export class RedisCallErrors {
  /** Why Redis cannot be reached right now, for error messages. */
  private lastError: Error | undefined;
  private readonly unsentErrors = new WeakSet<Error>();

  /** Whether a failed call may have reached Redis (then what it did may need undoing). */
  mayHaveRun(error: unknown): boolean {
    return !(error instanceof Error && this.unsentErrors.has(error));
  }

  /** `failing`: the connection reported `error`; calls failing from now on name it. */
  failing(error: Error): void {
    this.lastError = error;
  }

  /** `recovered`: the connection answers again; nothing to name any more. */
  recovered(): void {
    this.lastError = undefined;
  }

  /** Marks `error` as the failure of a call that was never sent. */
  unsent<E extends Error>(error: E): E {
    this.unsentErrors.add(error);
    return error;
  }

  /**
   * Redis cannot be reached: `what` happened. The message names the connection's
   * last error, or, when it reported none yet (a slow connect on a busy host),
   * `status`: what the connection was doing.
   */
  unreachable(key: string, what: string, status?: string): LockBackendError {
    const why = this.lastError
      ? ` (last error: ${this.lastError.message})`
      : status
        ? ` (the connection was ${status} and had reported no error)`
        : '';
    return new LockBackendError(`Redis is unreachable: ${what}${why}`, { key, cause: this.lastError });
  }

  failed(key: string, error: unknown): LockBackendError {
    if (error instanceof LockBackendError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new LockBackendError(`Redis command failed: ${message}`, { key, cause: error });
  }

  gaveUp(key: string): LockBackendError {
    return new LockBackendError('The caller gave up before the command was sent', { key });
  }

  closed(key: string): LockBackendError {
    return new LockBackendError('The Redis connection is closed', { key });
  }
}
