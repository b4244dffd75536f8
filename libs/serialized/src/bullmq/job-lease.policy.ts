import type { Job } from 'bullmq';
import { SERIALIZED_OPTIONS_SCHEMA } from '../config/serialized-options.schema';

interface WithLockDuration {
  readonly opts?: { readonly lockDuration?: unknown };
}

/**
 * The lease of the app lock a job holds while it runs: the `lockDuration` of the
 * BullMQ worker running it, or the decorator's `leaseMs` when that is shorter.
 *
 * A worker killed mid-job leaves both BullMQ's job lock and our app lock behind.
 * BullMQ hands the job back once its lock has run out (`lockDuration`, then the
 * stalled checker); an app lock with a longer lease (30 s by default) would keep
 * the key blocked after that, so the re-delivered job, or the next job of its
 * key, could only start when the dead worker's lease ran out. With the same
 * length, both locks pass on together. A live job loses neither: the app lock is
 * renewed every third of its lease, BullMQ's every half of `lockDuration`.
 *
 * Only the Redis driver has a lease; PostgreSQL frees a killed worker's lock when
 * its session ends, and the in-memory lock dies with the process.
 *
 * `undefined` (the module's lease applies) when the job's worker is unknown.
 */
export function jobLeaseMs(job: Job, processor: object, leaseMs: number | undefined): number | undefined {
  const lockDuration = workerLockDuration(job, processor);
  if (lockDuration === undefined) return leaseMs;
  const bound = Math.max(Math.ceil(lockDuration), SERIALIZED_OPTIONS_SCHEMA.leaseMs.perCall.min);
  return leaseMs === undefined ? bound : Math.min(leaseMs, bound);
}

/**
 * `lockDuration` of the worker processing `job`. A worker hands each job itself as
 * `job.queue`; a `WorkerHost` also exposes it as `processor.worker`.
 */
function workerLockDuration(job: Job, processor: object): number | undefined {
  const fromJob = (job as unknown as { queue?: WithLockDuration }).queue?.opts?.lockDuration;
  if (isDuration(fromJob)) return fromJob;
  try {
    // `WorkerHost.worker` is a getter that throws before the worker exists.
    const fromHost = (processor as { worker?: WithLockDuration }).worker?.opts?.lockDuration;
    return isDuration(fromHost) ? fromHost : undefined;
  } catch {
    return undefined;
  }
}

function isDuration(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}
