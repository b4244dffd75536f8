import {
  jobOrderKeys,
  JOB_INSIDE_FIELD,
  JOB_LIMIT_FIELD,
  JOB_LOCK_KEY_FIELD,
  JOB_PARKED_FIELD,
  ORDER_TTL_MS,
  type QueueKeyNamer,
} from './job-order.keys';
import { JOB_ORDER_SCRIPTS } from './job-order.scripts';
import type { ScriptClient } from '../internal/lua.script';

/** What `enter` decided for a job. */
export type EnterVerdict =
  /**
   * The job is let in (or was before: it keeps its place): run it, and promote
   * `promote`, parked jobs that may come in after it.
   */
  | { readonly kind: 'run'; readonly promote: readonly string[] }
  /** Jobs that became active before this one have no recorded key yet: resolve theirs first. */
  | { readonly kind: 'unknown-keys'; readonly jobIds: readonly string[] }
  /** The key is full, or jobs ahead of this one wait (`headId` is the oldest of the key): park this job. */
  | { readonly kind: 'park'; readonly headId: string };

/**
 * The per-key order of one BullMQ queue, kept in the Redis the queue uses (see
 * `lua/enter-job.lua` and `lua/leave-job.lua`). Every method is one script call.
 */
export class JobOrderStore {
  constructor(
    private readonly client: ScriptClient,
    private readonly queue: QueueKeyNamer,
  ) {}

  /**
   * Takes the job's place in the order of `lockKey` (once; a retried or parked job
   * keeps it) and says whether it may run: jobs are let in in order, while the jobs
   * inside, it included, are no more than the smallest limit among them and its own
   * `limit` (`lua/job-common.lua`). `known` are `[jobId, lockKey]` pairs of older
   * active jobs, oldest first, as resolved after an `unknown-keys` verdict.
   */
  async enter(jobId: string, lockKey: string, limit: number, known: readonly (readonly [string, string])[] = []): Promise<EnterVerdict> {
    const keys = jobOrderKeys(this.queue, lockKey);
    const reply = (await JOB_ORDER_SCRIPTS.enter.run(this.client, [
      // keys, then arguments
      keys.active,
      keys.sequence,
      keys.order,
      ...this.common(keys.jobPrefix),
      keys.orderPrefix,
      jobId,
      lockKey,
      limit,
      JOB_LOCK_KEY_FIELD,
      ORDER_TTL_MS,
      ...known.flat(),
    ])) as [number, ...string[]];
    switch (Number(reply[0])) {
      case 0:
        return { kind: 'run', promote: reply.slice(1).map(String) };
      case 1:
        return { kind: 'unknown-keys', jobIds: reply.slice(1).map(String) };
      default:
        return { kind: 'park', headId: String(reply[1] ?? '') };
    }
  }

  /**
   * Removes the job from the order of `lockKey` and returns the parked jobs that
   * may run now, oldest first: one when every job of the key has the same limit,
   * more when the job that left had a smaller limit than those behind it.
   */
  async leave(jobId: string, lockKey: string): Promise<readonly string[]> {
    const keys = jobOrderKeys(this.queue, lockKey);
    const reply = (await JOB_ORDER_SCRIPTS.leave.run(this.client, [keys.order, ...this.common(keys.jobPrefix), jobId, ORDER_TTL_MS])) as
      unknown[] | null;
    return (reply ?? []).map(String);
  }

  /** The arguments every script takes first (`lua/job-common.lua`). */
  private common(jobPrefix: string): string[] {
    return [jobPrefix, JOB_LIMIT_FIELD, JOB_PARKED_FIELD, JOB_INSIDE_FIELD];
  }
}
