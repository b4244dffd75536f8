import { SerializedError } from './serialized.error';

/** Why a lock could not be queued for. */
export type LockBusyReason = 'held' | 'max-pending' | 'shutting-down';

/**
 * The key is busy and the caller may not wait for it: `mode: 'reject'` found it
 * held (or waited for), or `maxPending` waiters of this key already queue in this
 * process. HTTP: 429 with `Retry-After`.
 */
export class LockBusyError extends SerializedError {
  override readonly name = 'LockBusyError';
  readonly reason: LockBusyReason;
  /** The `maxPending` bound that was hit, for `reason: 'max-pending'`. */
  readonly maxPending: number | undefined;

  constructor(key: string, reason: LockBusyReason = 'held', options: { maxPending?: number; handler?: string } = {}) {
    super(describe(key, reason, options.maxPending), key, options.handler);
    this.reason = reason;
    this.maxPending = options.maxPending;
  }
}

function describe(key: string, reason: LockBusyReason, maxPending: number | undefined): string {
  if (reason === 'max-pending') {
    return `Lock "${key}" is busy: ${maxPending} callers already wait for it in this process (maxPending)`;
  }
  return `Lock "${key}" is busy and the caller asked not to wait (mode: 'reject')`;
}
