import type { Job } from 'bullmq';

/**
 * Errors with which a processor hands its job back to BullMQ to run later
 * (`DelayedError`, `WaitingError`, `WaitingChildrenError`, `RateLimitError`):
 * the job is not finished, so it keeps the head of its key. BullMQ recognises
 * them by name as well, and so do we (no `bullmq` import needed).
 */
const COMES_BACK = new Set(['DelayedError', 'WaitingError', 'WaitingChildrenError', 'RateLimitError']);

/**
 * Whether BullMQ will run `job` again after its processor threw `error`: the
 * same rule as BullMQ's `Job#shouldRetryJob` (attempts left, not discarded, not
 * an `UnrecoverableError`). A job that will run again keeps the head of its key,
 * so the retry runs before any later job of that key.
 *
 * A custom backoff strategy returning -1 makes BullMQ fail the job although
 * attempts are left; we cannot know that in advance. The job then keeps the head
 * until a parked successor re-checks (`recheckMs`) and finds it failed.
 */
export function willRunAgain(job: Job, error: unknown): boolean {
  const name = (error as Error | undefined)?.name;
  if (name && COMES_BACK.has(name)) return true;
  if ((error as Error | undefined)?.message === 'bullmq:rateLimitExceeded') return true;
  if (name === 'UnrecoverableError') return false;
  if ((job as unknown as { discarded?: boolean }).discarded) return false;
  return job.attemptsMade + 1 < (job.opts.attempts ?? 0);
}
