import { SerializedError } from './serialized.error';

/**
 * The caller waited `waitTimeoutMs` for the key and did not get it; it has left
 * the queue. HTTP: 429 with `Retry-After`.
 */
export class LockTimeoutError extends SerializedError {
  override readonly name = 'LockTimeoutError';
  readonly waitTimeoutMs: number;

  constructor(key: string, waitTimeoutMs: number, handler?: string) {
    super(`Timed out after ${waitTimeoutMs} ms waiting for lock "${key}"`, key, handler);
    this.waitTimeoutMs = waitTimeoutMs;
  }
}
