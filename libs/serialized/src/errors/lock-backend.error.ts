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
}
