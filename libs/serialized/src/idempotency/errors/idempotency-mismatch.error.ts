import { SerializedError } from '../../errors/serialized.error';

/**
 * The idempotency key was already used for a different request (another method,
 * URL or body): replaying the stored response would answer a question that was
 * not asked. The draft's answer is 422 Unprocessable Content. `key` is the lock key.
 */
export class IdempotencyMismatchError extends SerializedError {
  override readonly name = 'IdempotencyMismatchError';

  constructor(key: string, handler?: string) {
    super(`Idempotency key "${key}" was already used for a different request`, key, handler);
  }
}
