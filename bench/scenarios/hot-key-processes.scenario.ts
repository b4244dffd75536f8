import { sharedNow } from '../lib/clock';
import { CriticalSections } from '../lib/handoffs';
import { interleave, type Sample } from '../lib/interleave';
import { WorkerProcess } from '../lib/worker-process';
import type { ResultEntry } from '../report/results';
import { BACKEND_LABEL, SUBJECTS } from '../subjects';
import type { Backend } from '../subjects/subject';
import { handoffEntries } from './handoff-entries';
import { backendDown, type Scenario, type ScenarioContext, unavailableContenders } from './scenario';

/**
 * 3. One hot key shared by 4 OS processes × 25 waiters. Each process records its
 * critical sections on the shared clock (`performance.timeOrigin + now()`); merged
 * and sorted, the gap between one section's end (the release call) and the next
 * one's start — usually in another process — is the hand-off latency.
 */
export const hotKeyProcessesScenario: Scenario = {
  id: 3,
  title: 'One hot key, 4 processes × 25 waiters',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, processes, waitersPerProcess, warmupMs, durationMs, drainTimeoutMs } = config.hotKeyProcesses;
    const backends = (['redis', 'postgres'] as const).filter((b) => !backendDown(context.services, b));
    const workers: WorkerProcess[] = [];
    const entries: ResultEntry[] = [];
    try {
      if (backends.length) {
        log(`  [3] starting ${processes} worker processes`);
        for (let i = 0; i < processes; i++) workers.push(WorkerProcess.start(`hot-key worker ${i + 1}`, 'bench/workers/hot-key.worker.ts'));
      }
      for (const backend of ['redis', 'postgres'] as const) {
        log(`  [3] ${BACKEND_LABEL[backend]}`);
        const specs = SUBJECTS[backend].filter((s) => s.canWait);
        const unavailable = await unavailableContenders(context.services, backend, specs, waitersPerProcess, processes);
        const outcomes = await interleave(
          specs.map((s) => s.id),
          rounds,
          async (id, round): Promise<Sample> => {
            if (unavailable.has(id)) return { metrics: {}, failure: unavailable.get(id) };
            return measure(workers, backend, id, `xhot${round}:${id}`);
          },
          log,
        );
        entries.push(
          ...handoffEntries({
            scenario: 3,
            backend,
            title: `3. Hot key, ${processes} processes × ${waitersPerProcess} waiters (${BACKEND_LABEL[backend]})`,
            params: `${processes} OS processes × ${waitersPerProcess} waiters looping on one key, empty critical section, shared clock; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`,
            specs,
            outcomes,
          }),
        );
      }
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    return entries;

    async function measure(all: WorkerProcess[], backend: Backend, id: string, key: string): Promise<Sample> {
      try {
        await Promise.all(all.map((w) => w.request({ type: 'open', backend, subject: id, context: context.subjects }, 'opened', 30_000)));
        const startAt = sharedNow() + 100;
        const from = startAt + warmupMs;
        const to = from + durationMs;
        const replies = await Promise.all(
          all.map((w) => w.request({ type: 'run', key, waiters: waitersPerProcess, startAt, to, drainTimeoutMs }, 'result', to - sharedNow() + drainTimeoutMs + 10_000)),
        );
        const failures = replies.flatMap((r) => r.failures as string[]);
        // Each worker's clock, moved onto the parent's; the calibration error bounds the overlap tolerance.
        const offsets = await Promise.all(all.map((w) => clockOffset(w)));
        const flats = replies.map((r, i) => (r.sections as number[]).map((t) => t - offsets[i].offset));
        const tolerance = Math.max(0.05, ...offsets.map((o) => o.error));
        const stats = CriticalSections.fromFlat(...flats).analyse(from, to, tolerance);
        const metrics = { handoffsPerSec: stats.handoffsPerSec, p50: stats.p50, p99: stats.p99 };
        const waiters = processes * waitersPerProcess;
        if (failures.length) return { metrics, failure: `${failures.length} of ${waiters} waiters gave up or erred (${failures[0]})` };
        if (stats.overlaps) return { metrics, failure: `mutual exclusion broken: ${stats.overlaps} critical sections started more than ${tolerance.toFixed(3)} ms (the clock calibration error) before their predecessor ended` };
        if (stats.count === 0) return { metrics, failure: 'no hand-off in the measuring window' };
        return { metrics };
      } finally {
        await Promise.all(all.map((w) => w.request({ type: 'close' }, 'closed', 10_000).catch(() => undefined)));
      }
    }
  },
};

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
