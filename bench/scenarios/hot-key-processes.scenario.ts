import type { Redis } from 'ioredis';
import { redisCommandsExecuted } from '../lib/backend-counters';
import { sharedNow } from '../lib/clock';
import { CriticalSections } from '../lib/handoffs';
import { describeError, interleave, type Sample } from '../lib/interleave';
import { WorkerProcess } from '../lib/worker-process';
import type { ResultEntry } from '../report/results';
import { BACKEND_LABEL, SUBJECTS, VARIANTS } from '../subjects';
import { connectRedis } from '../subjects/redis.subjects';
import type { Backend } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { handoffEntries } from './handoff-entries';
import { backendDown, type Scenario, type ScenarioContext, unavailableContenders } from './scenario';

/**
 * 3. One hot key shared by 4 OS processes × 25 waiters. Each process records its
 * critical sections on the shared clock (`performance.timeOrigin + now()`); merged
 * and sorted, the gap between one section's end (the release call) and the next
 * one's start — usually in another process — is the hand-off latency. Each
 * contender gets processes of its own (started at its first round, killed if it
 * overruns), so one contender's failure or leftovers never touch another's.
 */
export const hotKeyProcessesScenario: Scenario = {
  id: 3,
  title: 'One hot key, 4 processes × 25 waiters',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, processes, waitersPerProcess, warmupMs, durationMs, drainTimeoutMs } = config.hotKeyProcesses;
    // Per contender (backend:id), its own `processes` workers.
    const workerSets = new Map<string, WorkerProcess[]>();
    let counter: Redis | undefined;
    const entries: ResultEntry[] = [];
    try {
      for (const backend of ['redis', 'postgres'] as const) {
        if (backendDown(context.services, backend)) log(`  [3] ${BACKEND_LABEL[backend]}: ${backendDown(context.services, backend)}`);
        else log(`  [3] ${BACKEND_LABEL[backend]}`);
        const specs = SUBJECTS[backend].filter((s) => s.canWait);
        // Variants of ours (Redis local hand-off in cohort mode) run in the same rounds.
        const variants = Object.entries(VARIANTS[backend]);
        const running = [...specs, ...variants.map(([, spec]) => spec)];
        const unavailable = await unavailableContenders(context.services, backend, running, waitersPerProcess, processes);
        const outcomes = await interleave(
          running.map((s) => s.id),
          rounds,
          async (id, round): Promise<Sample> => {
            if (unavailable.has(id)) return { metrics: {}, failure: unavailable.get(id) };
            const name = `${backend}:${id}`;
            let set = workerSets.get(name);
            if (!set) {
              set = Array.from({ length: processes }, (_, i) =>
                WorkerProcess.start(`${name} worker ${i + 1}`, 'bench/workers/hot-key.worker.ts'),
              );
              workerSets.set(name, set);
            }
            if (backend === 'redis' && !counter) {
              counter = connectRedis(context.subjects.redisUrl);
              counter.on('error', () => undefined);
            }
            const before = backend === 'redis' ? await redisCommandsExecuted(counter!).catch(() => undefined) : undefined;
            const sample = await measure(set, backend, id, `xhot${round}:${id}`);
            if (sample.failure && !sample.completed) {
              // It overran or its processes died: nothing of it may run on beside the next contender.
              workerSets.delete(name);
              await Promise.all(set.map((w) => w.kill()));
            }
            const after = backend === 'redis' ? await redisCommandsExecuted(counter!).catch(() => undefined) : undefined;
            if (sample.acquisitions) {
              if (before !== undefined && after !== undefined) sample.metrics.commandsPerOp = (after - before - 1) / sample.acquisitions;
              if (sample.statements !== undefined) sample.metrics.statementsPerOp = sample.statements / sample.acquisitions;
            }
            return { metrics: sample.metrics, failure: sample.failure };
          },
          log,
        );
        const title = `3. Hot key, ${processes} processes × ${waitersPerProcess} waiters (${BACKEND_LABEL[backend]})`;
        const params = `${processes} OS processes × ${waitersPerProcess} waiters looping on one key, empty critical section, shared clock; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`;
        entries.push(
          ...handoffEntries({ scenario: 3, backend, title, params, specs, outcomes }),
          ...costEntries({ scenario: 3, backend, title, params, specs, outcomes }),
        );
        for (const [variant, spec] of variants) {
          const against = [spec, ...specs.filter((s) => s.kind !== 'ours')];
          const named = `${title}, ${spec.label}`;
          entries.push(
            ...handoffEntries({ scenario: 3, backend, title: named, params, specs: against, outcomes, variant }),
            ...costEntries({ scenario: 3, backend, title: named, params, specs: against, outcomes, variant }),
          );
        }
      }
    } finally {
      await Promise.all([...workerSets.values()].flat().map((w) => w.stop()));
      counter?.disconnect();
    }
    return entries;

    async function measure(all: WorkerProcess[], backend: Backend, id: string, key: string): Promise<CountedSample> {
      try {
        await Promise.all(all.map((w) => w.request({ type: 'open', backend, subject: id, context: context.subjects }, 'opened', 30_000)));
        const startAt = sharedNow() + 100;
        const from = startAt + warmupMs;
        const to = from + durationMs;
        const replies = await Promise.all(
          all.map((w) =>
            w.request(
              { type: 'run', key, waiters: waitersPerProcess, startAt, to, drainTimeoutMs },
              'result',
              to - sharedNow() + drainTimeoutMs + 10_000,
            ),
          ),
        );
        const failures = replies.flatMap((r) => r.failures as string[]);
        const acquisitions = replies.reduce((n, r) => n + (r.sections as number[]).length / 2, 0);
        const statements =
          backend === 'postgres' ? replies.reduce((n, r) => n + ((r.statements as number | undefined) ?? 0), 0) : undefined;
        const counted = { completed: true, acquisitions, statements };
        // Each worker's clock, moved onto the parent's; the calibration error bounds the overlap tolerance.
        const offsets = await Promise.all(all.map((w) => clockOffset(w)));
        const flats = replies.map((r, i) => (r.sections as number[]).map((t) => t - offsets[i].offset));
        const tolerance = Math.max(0.05, ...offsets.map((o) => o.error));
        const stats = CriticalSections.fromFlat(...flats).analyse(from, to, tolerance);
        const metrics = { handoffsPerSec: stats.handoffsPerSec, p50: stats.p50, p99: stats.p99 };
        const waiters = processes * waitersPerProcess;
        if (failures.length)
          return { ...counted, metrics, failure: `${failures.length} of ${waiters} waiters gave up or erred (${failures[0]})` };
        if (stats.overlaps)
          return {
            ...counted,
            metrics,
            failure: `mutual exclusion broken: ${stats.overlaps} critical sections started more than ${tolerance.toFixed(3)} ms (the clock calibration error) before their predecessor ended`,
          };
        if (stats.count === 0) return { ...counted, metrics, failure: 'no hand-off in the measuring window' };
        return { ...counted, metrics };
      } catch (error) {
        return { metrics: {}, failure: describeError(error), completed: false };
      } finally {
        await Promise.all(all.map((w) => w.request({ type: 'close' }, 'closed', 10_000).catch(() => undefined)));
      }
    }
  },
};

/** A sample, with what the backend did for it and whether the processes completed the round. */
interface CountedSample extends Sample {
  completed: boolean;
  acquisitions?: number;
  statements?: number;
}

/**
 * Offset of a worker's shared clock from this process's (both read
 * `performance.timeOrigin + now()`, which can differ by tens of microseconds between
 * processes): the ping with the shortest round trip, worker time minus the midpoint
 * of send and receive; `error` is half that round trip.
 */
async function clockOffset(worker: WorkerProcess): Promise<{ offset: number; error: number }> {
  let best = { offset: 0, error: Infinity };
  for (let i = 0; i < 15; i++) {
    const sent = sharedNow();
    const reply = await worker.request({ type: 'ping' }, 'pong', 5000);
    const received = sharedNow();
    const error = (received - sent) / 2;
    if (error < best.error) best = { offset: (reply.now as number) - (sent + received) / 2, error };
  }
  return best;
}
