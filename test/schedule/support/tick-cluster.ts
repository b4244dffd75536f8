import { randomUUID } from 'node:crypto';
import { WorkerProcess, type WorkerMessage } from '../../support/processes';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../support/services';

/** One run of a job, as its instance reported it (times by that instance's own clock). */
export interface TickRun {
  job: string;
  pid: number;
  start: number;
  end: number;
}

/** Instances of test/schedule/workers/tick-app.worker.ts sharing one backend and key prefix. */
export class TickCluster {
  private constructor(
    readonly instances: WorkerProcess[],
    /** Real time (this process's clock) when every instance was ready. */
    readonly readyAt: number,
  ) {}

  /** Starts one instance per entry of `offsets` (its clock shift in ms) and waits until all are ready. */
  static async start(driver: 'memory' | 'redis' | 'postgres', jobs: string[], offsets: number[]): Promise<TickCluster> {
    const keyPrefix = `tick-${randomUUID().slice(0, 8)}`;
    const instances = offsets.map((offset, i) =>
      WorkerProcess.start(`tick-app-${i}`, 'test/schedule/workers/tick-app.worker.ts', {
        DRIVER: driver,
        REDIS_URL: TEST_REDIS_URL,
        DATABASE_URL: TEST_DATABASE_URL,
        KEY_PREFIX: keyPrefix,
        JOBS: jobs.join(','),
        CLOCK_OFFSET_MS: String(offset),
      }),
    );
    try {
      await Promise.all(
        instances.map(async (instance) => {
          const first = await instance.waitFor((m) => m.type === 'ready' || m.type === 'failed', 45_000);
          if (first.type === 'failed') throw new Error(`${instance.name} failed to start: ${first.message as string}`);
        }),
      );
    } catch (error) {
      await Promise.all(instances.map((instance) => instance.stop()));
      throw error;
    }
    return new TickCluster(instances, Date.now());
  }

  /** Every run reported so far of `job` (a prefix: `shared` matches both shared methods). */
  runs(job: string): TickRun[] {
    return this.instances.flatMap((instance) =>
      instance.messages.filter((m: WorkerMessage) => m.type === 'run' && String(m.job).startsWith(job)).map((m) => m as unknown as TickRun),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.stop()));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How many runs each tick got, for the ticks scheduled in `[from, to]` (real time):
 * a run's tick is the period its start falls in by its own instance's clock, which
 * is how that instance's cron named it. A tick with no run is listed with 0.
 */
export function runsPerTick(runs: TickRun[], periodMs: number, from: number, to: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (let tick = Math.ceil(from / periodMs) * periodMs; tick <= to; tick += periodMs) counts.set(tick, 0);
  for (const run of runs) {
    const tick = Math.floor(run.start / periodMs) * periodMs;
    if (counts.has(tick)) counts.set(tick, counts.get(tick)! + 1);
  }
  return counts;
}

/** Pairs of runs whose [start, end] intervals overlap (by each instance's own clock). */
export function overlappingPairs(runs: TickRun[]): Array<[TickRun, TickRun]> {
  const pairs: Array<[TickRun, TickRun]> = [];
  for (let i = 0; i < runs.length; i++) {
    for (let j = i + 1; j < runs.length; j++) {
      if (runs[i].start < runs[j].end && runs[j].start < runs[i].end) pairs.push([runs[i], runs[j]]);
    }
  }
  return pairs;
}
