/** The part of a BullMQ queue (or worker) that names its Redis keys. */
export interface QueueKeyNamer {
  toKey(type: string): string;
}

/**
 * Field of a BullMQ job hash where the job's lock key is recorded once the job
 * has taken its place in the order ('' for a job that has no key). It lives in the
 * job's own hash so it disappears with the job: nothing is left per job.
 */
export const JOB_LOCK_KEY_FIELD = 'serializedKey';

/**
 * Field of a job hash holding the job's limit (`concurrency` of its `@Serialized`,
 * as its last worker asked): how many jobs of its key may run beside it.
 */
export const JOB_LIMIT_FIELD = 'serializedLimit';

/**
 * Field of a job hash set while the job is parked waiting for its turn: a job that
 * leaves promotes only such jobs, never one waiting out a retry's backoff.
 */
export const JOB_PARKED_FIELD = 'serializedParked';

/**
 * Field of a job hash set once the job is let in: it holds a place of its key
 * (through retries, parking on a busy app lock and stalled recovery) until it
 * leaves the order.
 */
export const JOB_INSIDE_FIELD = 'serializedInside';

/**
 * An order set unused for this long expires: only the order of a key whose jobs
 * were all removed behind the library's back (obliterate, clean) is ever left
 * behind, and not forever. A live order is touched at least every `recheckMs`
 * while jobs wait in it.
 */
export const ORDER_TTL_MS = 7 * 24 * 3600_000;

/**
 * Redis keys of the per-key order of a queue. They extend the queue's own keys
 * (`<prefix>:<queue>:…`), so a `{hash-tagged}` prefix puts them in the queue's
 * Cluster slot, as Lua scripts touching both require.
 */
export function jobOrderKeys(queue: QueueKeyNamer, lockKey: string) {
  return {
    /** BullMQ's list of active jobs (newest on the left). */
    active: queue.toKey('active'),
    /** Per-queue counter numbering jobs as they take their places. */
    sequence: queue.toKey('serialized:seq'),
    /** Sorted set of the jobs of `lockKey`, by number; the head may run. Deleted when empty. */
    order: queue.toKey(`serialized:key:${lockKey}`),
    /** Prefix of the queue's job hashes and state keys (`<prefix>:<queue>:`). */
    jobPrefix: queue.toKey(''),
    /** Prefix of the order sets. */
    orderPrefix: queue.toKey('serialized:key:'),
  };
}
