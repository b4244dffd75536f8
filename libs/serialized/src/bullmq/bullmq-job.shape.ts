import type { Job } from 'bullmq';

/**
 * Whether a method's first argument is a BullMQ `Job` handed to a worker's
 * processor. Duck-typed on purpose: importing `bullmq` to use `instanceof` would
 * load it for every app, and `bullmq` is an optional peer.
 */
export function isBullmqJob(value: unknown): value is Job {
  if (value === null || typeof value !== 'object') return false;
  const job = value as Partial<Record<keyof Job | 'queue', unknown>>;
  const queue = job.queue as { toKey?: unknown } | null | undefined;
  return (
    (typeof job.id === 'string' || typeof job.id === 'number') &&
    typeof job.moveToDelayed === 'function' &&
    typeof job.promote === 'function' &&
    typeof job.opts === 'object' &&
    queue !== null &&
    typeof queue === 'object' &&
    typeof queue.toKey === 'function' &&
    // `in`, not a read: `client` is a getter that would start connecting.
    'client' in queue
  );
}
