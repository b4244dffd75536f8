import { now, sleep } from './clock';
import { describeError } from './interleave';
import { percentiles } from './stats';
import { withTimeout } from '../services';

/** What `callers` looping callers did inside one measuring window. */
export interface WindowResult {
  /** Operations completed inside the window. */
  readonly ops: number;
  /** Their latencies (ms), from the start of each to its end. */
  readonly latencies: number[];
  readonly elapsedMs: number;
  /** The process's CPU during the window (undefined when no operation ended after it). */
  readonly cpu: NodeJS.CpuUsage | undefined;
  /** Why callers gave up (an operation threw), and callers still running after the drain. */
  readonly failures: string[];
}

/**
 * Runs `callers` callers, each looping `once` until the window ends (it opens `warmupMs`
 * from now and lasts `durationMs`), and counts the operations that end inside it. Time
 * is read on every turn, never from a timer: a lock that hands over in microtasks would
 * starve one. A caller whose operation throws gives up; callers still running
 * `drainTimeoutMs` after the window are reported as a failure.
 */
export async function measureCallers(
  callers: number,
  window: { warmupMs: number; durationMs: number; drainTimeoutMs: number },
  once: () => Promise<void>,
): Promise<WindowResult> {
  const from = now() + window.warmupMs;
  const to = from + window.durationMs;
  let windowStart = 0;
  let windowEnd = 0;
  let cpuStart: NodeJS.CpuUsage | undefined;
  let cpu: NodeJS.CpuUsage | undefined;
  let ops = 0;
  const latencies: number[] = [];
  const failures: string[] = [];

  const timed = async (): Promise<void> => {
    const started = now();
    await once();
    const done = now();
    if (cpuStart === undefined) {
      if (done >= from) {
        cpuStart = process.cpuUsage();
        windowStart = done;
      }
    } else if (cpu === undefined) {
      if (done < to) {
        ops++;
        latencies.push(done - started);
      } else {
        cpu = process.cpuUsage(cpuStart);
        windowEnd = done;
      }
    }
  };
  const loop = async (): Promise<void> => {
    while (now() < to) {
      try {
        await timed();
      } catch (error) {
        failures.push(describeError(error));
        return; // this caller gave up
      }
    }
  };
  const all = Promise.all(Array.from({ length: callers }, loop));
  try {
    await withTimeout(
      all,
      to - now() + window.drainTimeoutMs,
      `callers did not finish within ${window.drainTimeoutMs} ms after the window`,
    );
  } catch (error) {
    failures.push(describeError(error));
  }
  await sleep(0);
  return { ops, latencies, elapsedMs: windowEnd - windowStart, cpu, failures };
}

/** A window's rate (named `rate`), p50 and p99 latency and CPU per operation; none when nothing was measured. */
export function windowMetrics(result: WindowResult, rate: string): Record<string, number> {
  const { ops, latencies, elapsedMs, cpu } = result;
  if (!cpu || ops === 0) return {};
  const [p50Ms, p99Ms] = percentiles(latencies, [50, 99]);
  return { [rate]: ops / (elapsedMs / 1000), p50Ms, p99Ms, cpuMicrosPerOp: (cpu.user + cpu.system) / ops };
}
