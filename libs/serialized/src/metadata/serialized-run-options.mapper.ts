import { composeLockKey } from '../key/lock-key.composer';
import type { RunOptions } from '../lock.service';
import type { SerializedMetadata } from './serialized-options.interface';

/**
 * `<scope>:<value>`, with `%` and `:` inside either part escaped (see
 * `composeLockKey`); the provider puts it under `keyPrefix`.
 */
export function lockKeyOf(metadata: SerializedMetadata, value: string): string {
  return composeLockKey(metadata.options.scope ?? metadata.defaultScope, value);
}

export function runOptionsOf(metadata: SerializedMetadata, handler: string, signal?: AbortSignal): RunOptions {
  const { mode, waitTimeoutMs, leaseMs, maxPending, reentrant, handoff, transaction, concurrency, shared } = metadata.options;
  return { mode, waitTimeoutMs, leaseMs, maxPending, reentrant, handoff, handler, signal, transaction, concurrency, shared };
}
