import { SerializedError } from './serialized.error';

/**
 * A held lock stopped being ours before it was released: its lease could not be
 * renewed, its database session ended, or it was taken over. Delivered as the
 * reason of `lock.signal`, and thrown by `extend()` on a lost lock. Work that
 * must not run unserialized should watch `lock.signal` and use `fencingToken`.
 */
export class LockLostError extends SerializedError {
  override readonly name = 'LockLostError';

  constructor(key: string, reason: string, cause?: unknown, handler?: string) {
    super(`Lock "${key}" was lost: ${reason}`, key, handler, cause);
  }
}
