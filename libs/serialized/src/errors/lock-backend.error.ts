import { SerializedError } from './serialized.error';

/**
 * The lock backend could not be used (unreachable, refused, shutting down), so
 * the call fails closed: the protected code never runs unserialized. HTTP: 503.
 */
export class LockBackendError extends SerializedError {
  override readonly name = 'LockBackendError';

  constructor(message: string, options: { key?: string; cause?: unknown; handler?: string } = {}) {
    super(options.key ? `${message} (lock "${options.key}")` : message, options.key, options.handler, options.cause);
  }

  /** A call that came after the provider began to shut down (every provider says it this way). */
  static shuttingDown(key?: string): LockBackendError {
    return new LockBackendError('The lock provider is shutting down', { key });
  }
}
