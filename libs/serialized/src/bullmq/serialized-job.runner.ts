import { Logger } from '@nestjs/common';
import type { Job, MinimalQueue } from 'bullmq';
import type { SerializedMetadata } from '../metadata/serialized-options.interface';
import { lockKeyOf, runOptionsOf } from '../metadata/serialized-run-options.mapper';
import { LockBackendError, LockBusyError, SerializationKeyError } from '../errors';
import { SerializedConfigError } from '../config/serialized-config.error';
import { resolveArgumentsKey } from '../key/arguments-key.resolver';
import type { HeldKey, LockService } from '../lock.service';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { redactUrls } from '../internal/secrets.redact';
import { loadBullmq } from './bullmq.loader';
import { JobOrderStore, type EnterVerdict } from './job-order.store';
import { jobLeaseMs } from './job-lease.policy';
import { willRunAgain } from './job-retry.policy';
import { isScriptClient } from '../internal/lua.script';
import type { ResolvedSerializedJobsOptions } from './serialized-jobs-options.interface';
import { serializedJobsOptionsOf } from './serialized-jobs.decorator';

/** A call of a `@Serialized` method whose first argument is a BullMQ job. */
export interface SerializedJobCall {
  /** The app's `LockService` (injected into the processor). */
  readonly lockService: LockService;
  readonly metadata: SerializedMetadata;
  /** `Class#method`, named in errors and logs. */
  readonly handler: string;
  /** The processor instance (`this` of the call). */
  readonly instance: object;
  /** The undecorated method. */
  readonly method: (...args: unknown[]) => unknown;
  /** The decorated method (carries `@SerializedJobs` metadata set on the method). */
  readonly decorated: object;
  /** `(job, token?, signal?)` as BullMQ passed them. */
  readonly args: readonly unknown[];
}

/** Rounds of resolving older jobs' keys before giving up and parking. */
const MAX_RESOLVE_ROUNDS = 5;

interface QueueHandle extends MinimalQueue {
  readonly name: string;
}

/**
 * Runs BullMQ jobs one at a time per key (`concurrency: N`: N at a time), in the
 * order jobs became active, without ever holding a worker slot while it waits
 * (docs/bullmq.md):
 *
 * 1. the job takes its place in the Redis order of its key (`enter-job.lua`);
 * 2. if the key is full (one job inside; with `concurrency: N`, N) or older jobs
 *    of the key still wait, it parks: it moves itself to BullMQ's delayed set and
 *    throws `DelayedError`, freeing the slot at once;
 * 3. once it may run, it takes the app's lock for the same key (with the same
 *    `concurrency`) without waiting, so it also excludes HTTP handlers sharing the
 *    `scope`; if that lock is busy, it parks for `lockRetryMs` and keeps its place.
 *    The lock's lease is at most the worker's `lockDuration` (`job-lease.policy.ts`);
 * 4. when it finishes for good (completed, or failed with no retry left) it leaves
 *    the order and promotes the parked jobs that may now run. A failed attempt
 *    that BullMQ will retry keeps its place, so the retry still runs before the
 *    jobs behind it, and the place still counts towards N.
 *
 * Parked jobs wake up by themselves after `recheckMs`, so a missed promotion
 * (a worker killed between leaving and promoting) never strands a key.
 */
export async function runSerializedJob(call: SerializedJobCall): Promise<unknown> {
  return new SerializedJobRun(call).run();
}

class SerializedJobRun {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly job: Job;
  private readonly queue: QueueHandle;
  private readonly token: string | undefined;
  private readonly options: ResolvedSerializedJobsOptions;
  private lockKey = '';
  /** Jobs of one key that may run at once (`concurrency`, default 1). */
  private readonly limit: number;
  private store!: JobOrderStore;

  constructor(private readonly call: SerializedJobCall) {
    this.job = call.args[0] as Job;
    this.queue = (this.job as unknown as { queue: QueueHandle }).queue;
    const token = call.args[1];
    this.token = typeof token === 'string' ? token : this.job.token;
    this.options = serializedJobsOptionsOf(call.decorated, call.instance);
    this.limit = call.metadata.options.concurrency ?? 1;
  }

  async run(): Promise<unknown> {
    const { DelayedError } = loadBullmq(this.call.handler);
    if (this.call.metadata.options.shared === true) {
      // Start-up refuses it on a `@Processor`; a job reaching another method (a plain `Worker`) fails for good.
      (this.job as unknown as { discard(): void }).discard();
      throw new SerializedConfigError([
        `@Serialized(…, { shared: true }) on ${this.call.handler}: BullMQ jobs do not hold a key shared (docs/bullmq.md)`,
      ]);
    }
    this.lockKey = lockKeyOf(this.call.metadata, await this.ownKey());
    this.store = new JobOrderStore(await this.client(), this.queue);

    const verdict = await this.enter();
    if (verdict.kind !== 'run') {
      this.logger.debug(
        `Job ${this.job.id} (${this.call.handler}) parked: "${this.lockKey}" is full or older jobs wait (oldest: job ${verdict.kind === 'park' ? verdict.headId : '?'})`,
      );
      await this.park(this.options.recheckMs, true);
      throw new DelayedError();
    }
    // Jobs behind it that may run beside it (a key with room for several).
    await this.promoteAll(verdict.promote);

    let held: HeldKey;
    try {
      const options = runOptionsOf(this.call.metadata, this.call.handler);
      // Bounded by BullMQ's own job lock, so that a killed worker's key passes on when its job does.
      const leaseMs = jobLeaseMs(this.job, this.call.instance, options.leaseMs);
      held = await this.call.lockService.acquire(this.lockKey, { ...options, leaseMs, mode: 'reject' });
    } catch (error) {
      if (!(error instanceof LockBusyError)) {
        if (!willRunAgain(this.job, error)) await this.leave();
        throw error;
      }
      // Held by an HTTP handler (or another app) sharing the scope: keep the place, try again later.
      this.logger.debug(
        `Job ${this.job.id} (${this.call.handler}) parked for ${this.options.lockRetryMs} ms: lock "${this.lockKey}" is held`,
      );
      await this.park(this.options.lockRetryMs, false);
      throw new DelayedError();
    }

    let result: unknown;
    try {
      result = await this.call.lockService.runHolding(held, () => this.call.method.apply(this.call.instance, this.call.args as unknown[]));
    } catch (error) {
      await held.release();
      if (!willRunAgain(this.job, error)) await this.leave();
      throw error;
    }
    await held.release();
    await this.leave();
    return result;
  }

  /** The job's own key value. A job without a valid key fails for good: retrying cannot add one. */
  private async ownKey(): Promise<string> {
    try {
      return await resolveArgumentsKey(this.call.metadata.parsedKey, this.call.args, this.call.handler);
    } catch (error) {
      if (error instanceof SerializationKeyError) (this.job as unknown as { discard(): void }).discard();
      throw error;
    }
  }

  private async client() {
    const client = await this.queue.client;
    if (!isScriptClient(client)) {
      throw new LockBackendError(
        `@Serialized on ${this.call.handler}: the connection of BullMQ queue "${this.queue.name}" cannot run Lua scripts (an ioredis connection is required)`,
        { handler: this.call.handler },
      );
    }
    return client;
  }

  /** `enter`, resolving the keys of older active jobs the script does not know yet. */
  private async enter(): Promise<EnterVerdict> {
    let known: (readonly [string, string])[] = [];
    for (let round = 0; ; round++) {
      const verdict = await this.backend(() => this.store.enter(String(this.job.id), this.lockKey, this.limit, known));
      if (verdict.kind !== 'unknown-keys') return verdict;
      // Jobs keep becoming active under a busy queue; after a few rounds, park and look again later.
      if (round >= MAX_RESOLVE_ROUNDS) return verdict;
      known = await Promise.all(verdict.jobIds.map(async (id) => [id, await this.keyOf(id)] as const));
    }
  }

  /**
   * The lock key of another job of this queue, as this processor would compute
   * it; '' when it has none (that job will fail with a `SerializationKeyError`).
   */
  private async keyOf(jobId: string): Promise<string> {
    const JobClass = this.job.constructor as typeof Job;
    const other = await this.backend(() => JobClass.fromId(this.queue, jobId));
    if (!other) return '';
    try {
      return lockKeyOf(this.call.metadata, await resolveArgumentsKey(this.call.metadata.parsedKey, [other], this.call.handler));
    } catch {
      return '';
    }
  }

  /**
   * Moves the job to the delayed set until `delayMs` from now, freeing its slot.
   * With `recheck`, asks again once parked: if its turn came in between, nobody
   * could promote it (it was not delayed yet), so it promotes itself.
   */
  private async park(delayMs: number, recheck: boolean): Promise<void> {
    await this.job.moveToDelayed(Date.now() + delayMs, this.token);
    if (!recheck) return;
    const verdict = await this.backend(() => this.store.enter(String(this.job.id), this.lockKey, this.limit));
    if (verdict.kind === 'run') await Promise.all([this.promote(this.job), this.promoteAll(verdict.promote)]);
  }

  /** Leaves the order of the key for good and wakes the jobs that may now run. Never throws: the re-check covers a failure. */
  private async leave(): Promise<void> {
    try {
      await this.promoteAll(await this.store.leave(String(this.job.id), this.lockKey));
    } catch (error) {
      this.logger.warn(
        `Job ${this.job.id} (${this.call.handler}) could not hand "${this.lockKey}" on: ${redactUrls(String((error as Error)?.message ?? error))}. The next job takes over within ${this.options.recheckMs} ms.`,
      );
    }
  }

  /** Promotes parked jobs of this queue whose turn came. */
  private async promoteAll(jobIds: readonly string[]): Promise<void> {
    const JobClass = this.job.constructor as typeof Job;
    // A handle is enough to promote: no need to read the job.
    await Promise.all(jobIds.map((jobId) => this.promote(new JobClass(this.queue, this.job.name, {}, {}, jobId))));
  }

  private async promote(job: Job): Promise<void> {
    try {
      await job.promote();
    } catch {
      // Not delayed any more: it woke up, or someone else promoted it. Either way it runs.
    }
  }

  /** Runs a Redis call of ours; its failures become `LockBackendError` naming the key and the method. */
  private async backend<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw new LockBackendError(`Could not use the Redis of BullMQ queue "${this.queue.name}" to order jobs`, {
        key: this.lockKey,
        cause: error,
        handler: this.call.handler,
      });
    }
  }
}
