import { SerializedError } from './serialized.error';

/** Why a lock could not be queued for. */
export type LockBusyReason = 'held' | 'max-pending' | 'max-pending-total' | 'shutting-down';

/**
 * The key is busy and the caller may not wait for it: `mode: 'reject'` found it
 * held (or waited for), `maxPending` waiters of this key already queue in this
 * process, or `maxPendingTotal` waiters of any key already queue in this provider
 * instance. HTTP: 429 with `Retry-After`.
 */
export class LockBusyError extends SerializedError {
  override readonly name = 'LockBusyError';
  readonly reason: LockBusyReason;
  /** The `maxPending` bound that was hit, for `reason: 'max-pending'`. */
  readonly maxPending: number | undefined;
  /** The `maxPendingTotal` bound that was hit, for `reason: 'max-pending-total'`. */
  readonly maxPendingTotal: number | undefined;

  constructor(
    key: string,
    reason: LockBusyReason = 'held',
    options: { maxPending?: number; maxPendingTotal?: number; handler?: string } = {},
  ) {
    super(describe(key, reason, options), key, options.handler);
    this.reason = reason;
    this.maxPending = options.maxPending;
    this.maxPendingTotal = options.maxPendingTotal;
  }
}

function describe(key: string, reason: LockBusyReason, options: { maxPending?: number; maxPendingTotal?: number }): string {
  if (reason === 'max-pending') {
    return `Lock "${key}" is busy: ${options.maxPending} callers already wait for it in this process (maxPending)`;
  }
  if (reason === 'max-pending-total') {
    return `Lock "${key}" is busy: ${options.maxPendingTotal} callers already wait for locks of this provider in this process (maxPendingTotal)`;
  }
  return `Lock "${key}" is busy and the caller asked not to wait (mode: 'reject')`;
}
