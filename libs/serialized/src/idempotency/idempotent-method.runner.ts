import { isBullmqJob } from '../bullmq/bullmq-job.shape';
import { readIdempotentCall } from './idempotency-key.reader';
import type { IdempotencyService } from './idempotency.service';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import type { IdempotentMetadata } from './idempotent-options.interface';
import { encodeStoredResponse, type StoredResponse } from './stored-response.codec';

/**
 * `@Idempotent` on a method called directly (a BullMQ `process(job)`, a service
 * method): the key comes from the arguments, the "response" is the method's return
 * value, stored as JSON and returned to every duplicate within the TTL (so a Date
 * comes back as its ISO string). A method that throws stores nothing.
 */
export async function runIdempotentMethod(
  service: IdempotencyService,
  metadata: IdempotentMetadata,
  instance: unknown,
  method: (...args: unknown[]) => unknown,
  args: unknown[],
): Promise<unknown> {
  const call = await readIdempotentCall(metadata, { args, isJob: isBullmqJob(args[0]) });
  if (!call) return method.apply(instance, args);
  const found = await service.find(call, metadata);
  if (found) return replayedValue(found);
  const held = await service.lock(call, metadata);
  try {
    const again = await service.find(call, metadata);
    if (again) return replayedValue(again);
    const value = await service.locks.runHolding(held, () => method.apply(instance, args));
    const record: StoredResponse = {
      fingerprint: call.fingerprint,
      kind: 'values',
      values: value === undefined ? [] : [value],
      storedAt: Date.now(),
    };
    if (Buffer.byteLength(encodeStoredResponse(record)) > (metadata.options.maxResponseBytes ?? IDEMPOTENCY_DEFAULTS.maxResponseBytes)) {
      service.warnOversize(metadata);
    } else {
      await service.save(call, metadata, record);
    }
    return value;
  } finally {
    await held.release();
  }
}

function replayedValue(record: StoredResponse): unknown {
  return record.kind === 'values' ? record.values?.[0] : record.body;
}
