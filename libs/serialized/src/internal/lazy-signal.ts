import type { Lock } from '../lock.interface';

/**
 * A lock that makes its `signal` on first use (an AbortController costs more than
 * the rest of an in-memory acquisition) lets `LockService` ask whether it was lost
 * without creating one: no signal yet means nobody could have aborted it.
 * @internal
 */
export const PEEK_SIGNAL = Symbol('nestjs-serialized.peekSignal');

/** @internal */
export interface LazySignal extends Lock {
  [PEEK_SIGNAL](): AbortSignal | undefined;
}
