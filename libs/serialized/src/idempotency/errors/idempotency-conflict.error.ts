import { SerializedError } from '../../errors/serialized.error';

/**
 * A request with this idempotency key is still being processed: `mode: 'reject'`
 * found it running, or a duplicate waited `waitTimeoutMs` for it in vain. The
 * draft's answer is 409 Conflict; retry later. `key` is the lock key.
 */
export class IdempotencyConflictError extends SerializedError {
  override readonly name = 'IdempotencyConflictError';

  constructor(key: string, handler?: string, cause?: unknown) {
    super(`A request with idempotency key "${key}" is still being processed`, key, handler, cause);
  }
}
