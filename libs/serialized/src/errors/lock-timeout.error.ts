import { SerializedError } from './serialized.error';

/**
 * Why a wait ran out: `key-held` — the key stayed held (or awaited ahead of the
 * caller) for the whole budget; `no-connection` — the key may well be free, but
 * no connection to the backend was free to ask within the budget (a PostgreSQL
 * lock pool at its size).
 */
export type LockTimeoutReason = 'key-held' | 'no-connection';

/**
 * The caller waited `waitTimeoutMs` for the key and did not get it; it has left
 * the queue. HTTP: 429 with `Retry-After`.
 */
export class LockTimeoutError extends SerializedError {
  override readonly name = 'LockTimeoutError';
  readonly waitTimeoutMs: number;
  /** What the caller was waiting for when its budget ran out (absent: the provider does not tell). */
  readonly reason: LockTimeoutReason | undefined;

  /**
   * @param detail the reason and, when it is not the key, what exactly ran out
   *   (e.g. `no lock session free within 300 ms (pool size 1)`)
   */
  constructor(key: string, waitTimeoutMs: number, handler?: string, detail?: { reason: LockTimeoutReason; message?: string }) {
    const why = detail ? `: ${detail.message ?? (detail.reason === 'key-held' ? 'key held' : 'no connection free')}` : '';
    super(`Timed out after ${waitTimeoutMs} ms waiting for lock "${key}"${why}`, key, handler);
    this.waitTimeoutMs = waitTimeoutMs;
    this.reason = detail?.reason;
  }
}
