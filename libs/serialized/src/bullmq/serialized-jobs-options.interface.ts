/**
 * Tuning of `@Serialized` on a BullMQ processor, set with `@SerializedJobs()`.
 * The defaults suit most queues; see docs/bullmq.md.
 */
export interface SerializedJobsOptions {
  /**
   * Safety net of a parked job: if no promotion reaches it (its predecessor's
   * worker died between finishing and promoting it, or its predecessor was failed
   * by BullMQ's stalled checker or removed), it wakes up after this long and checks
   * again. Each wake-up of a parked job costs a few Redis calls. Default 10 000 ms.
   */
  recheckMs?: number;
  /**
   * When a job's turn has come but the app's lock for the same key is held (by an
   * HTTP handler sharing the `scope`, for instance), the job is parked for this long
   * and then tries again, without occupying a worker slot. Default 1 000 ms.
   */
  lockRetryMs?: number;
}

/** The options with their defaults applied. */
export type ResolvedSerializedJobsOptions = Required<SerializedJobsOptions>;

/** Defaults of {@link SerializedJobsOptions}. */
export const SERIALIZED_JOBS_DEFAULTS: ResolvedSerializedJobsOptions = Object.freeze({
  recheckMs: 10_000,
  lockRetryMs: 1_000,
});
