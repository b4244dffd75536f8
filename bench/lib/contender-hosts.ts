import type { Redis } from 'ioredis';
import type { Backend, SubjectContext } from '../subjects/subject';
import { connectRedis } from '../subjects/redis.subjects';
import { redisCommandsExecuted } from './backend-counters';
import { describeError, type Sample } from './interleave';
import { WorkerProcess } from './worker-process';

/** What the contender worker answers to one `measure` request. */
export interface MeasuredReply {
  sample: Sample;
  /** Critical sections entered during the whole measurement (warm-up included). */
  acquisitions: number;
  /** Statements sent to PostgreSQL during the measurement (PostgreSQL contenders only). */
  statements?: number;
}

/**
 * Runs each contender of one scenario and backend in a process of its own (started
 * at its first round, kept for the next rounds, stopped at the end): a contender
 * that crashes, leaks or runs past its budget cannot slow down or kill the others,
 * nor the benchmark itself — it is killed and reported as failed.
 *
 * Around each measurement it also counts the backend work per acquisition: Redis
 * commands from `INFO commandstats` (scripts' inner commands included), PostgreSQL
 * statements from the worker's own count.
 */
export class ContenderHosts {
  private readonly workers = new Map<string, WorkerProcess>();
  private counter?: Redis;

  constructor(
    private readonly scenario: number,
    private readonly backend: Backend,
    private readonly context: SubjectContext,
  ) {}

  async measure(subject: string, round: number, params: Record<string, unknown>, budgetMs: number): Promise<Sample> {
    let worker = this.workers.get(subject);
    if (!worker) {
      worker = WorkerProcess.start(`scenario ${this.scenario} ${this.backend} ${subject}`, 'bench/workers/contender.worker.ts');
      this.workers.set(subject, worker);
    }
    const before = await this.redisCommands();
    let reply: MeasuredReply;
    try {
      const message = { type: 'measure', scenario: this.scenario, backend: this.backend, subject, round, params, context: this.context };
      reply = (await worker.request(message, 'measured', budgetMs)) as unknown as MeasuredReply;
    } catch (error) {
      this.workers.delete(subject);
      await worker.kill();
      return { metrics: {}, failure: `${describeError(error)} (its process was stopped)` };
    }
    const after = await this.redisCommands();
    const metrics = { ...reply.sample.metrics };
    if (reply.acquisitions > 0) {
      // The second INFO is not counted in its own reply; the first one is.
      if (before !== undefined && after !== undefined) metrics.commandsPerOp = (after - before - 1) / reply.acquisitions;
      if (reply.statements !== undefined) metrics.statementsPerOp = reply.statements / reply.acquisitions;
    }
    return { ...reply.sample, metrics };
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.stop()));
    this.workers.clear();
    this.counter?.disconnect();
  }

  private async redisCommands(): Promise<number | undefined> {
    if (this.backend !== 'redis') return undefined;
    if (!this.counter) {
      this.counter = connectRedis(this.context.redisUrl);
      this.counter.on('error', () => undefined);
    }
    return redisCommandsExecuted(this.counter).catch(() => undefined);
  }
}

/**
 * Runs `fn` with hosts for a scenario's backend, and stops them whatever happens.
 */
export async function withContenderHosts<T>(
  scenario: number,
  backend: Backend,
  context: SubjectContext,
  fn: (hosts: ContenderHosts) => Promise<T>,
): Promise<T> {
  const hosts = new ContenderHosts(scenario, backend, context);
  try {
    return await fn(hosts);
  } finally {
    await hosts.stopAll();
  }
}
