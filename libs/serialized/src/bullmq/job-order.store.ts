import { jobOrderKeys, JOB_LOCK_KEY_FIELD, ORDER_TTL_MS, type QueueKeyNamer } from './job-order.keys';
import { JOB_ORDER_SCRIPTS } from './job-order.scripts';
import type { ScriptClient } from '../internal/lua.script';

/** What `enter` decided for a job. */
export type EnterVerdict =
  /** The job heads its key: run it. */
  | { readonly kind: 'run' }
  /** Jobs that became active before this one have no recorded key yet: resolve theirs first. */
  | { readonly kind: 'unknown-keys'; readonly jobIds: readonly string[] }
  /** `headId` goes first: park this job. */
  | { readonly kind: 'park'; readonly headId: string };

/** The job at the head of a key after another one left it. */
export interface NextHead {
  readonly jobId: string;
  /** It sits in BullMQ's delayed set (parked) and must be promoted to run. */
  readonly delayed: boolean;
}

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
   * keeps it) and says whether it may run. `known` are `[jobId, lockKey]` pairs of
   * older active jobs, oldest first, as resolved after an `unknown-keys` verdict.
   */
  async enter(jobId: string, lockKey: string, known: readonly (readonly [string, string])[] = []): Promise<EnterVerdict> {
    const keys = jobOrderKeys(this.queue, lockKey);
    const reply = (await JOB_ORDER_SCRIPTS.enter.run(this.client, [
      // keys, then arguments
      keys.active,
      keys.sequence,
      keys.order,
      keys.jobPrefix,
      keys.orderPrefix,
      jobId,
      lockKey,
      JOB_LOCK_KEY_FIELD,
      ORDER_TTL_MS,
      ...known.flat(),
    ])) as [number, ...string[]];
    switch (Number(reply[0])) {
      case 0:
        return { kind: 'run' };
      case 1:
        return { kind: 'unknown-keys', jobIds: reply.slice(1).map(String) };
      default:
        return { kind: 'park', headId: String(reply[1] ?? '') };
    }
  }

  /** Removes the job from the order of `lockKey` and returns the job now at its head, if any. */
  async leave(jobId: string, lockKey: string): Promise<NextHead | undefined> {
    const keys = jobOrderKeys(this.queue, lockKey);
    const reply = (await JOB_ORDER_SCRIPTS.leave.run(this.client, [keys.order, keys.jobPrefix, jobId, ORDER_TTL_MS])) as [string?, number?];
    if (reply[0] === undefined || reply[0] === null) return undefined;
    return { jobId: String(reply[0]), delayed: Number(reply[1]) === 1 };
  }
}
