import { now, sleep } from '../lib/clock';
import { CriticalSections } from '../lib/handoffs';
import { describeError, interleave, type Sample } from '../lib/interleave';
import { withContenderHosts } from '../lib/contender-hosts';
import type { ResultEntry } from '../report/results';
import { withTimeout } from '../services';
import { BACKEND_LABEL, SUBJECTS } from '../subjects';
import type { LockSubject } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { handoffEntries } from './handoff-entries';
import { type Scenario, type ScenarioContext, unavailableContenders } from './scenario';

/**
 * 2. One hot key, 100 concurrent waiters in one process, each looping
 * acquire → empty critical section → release. Hand-offs per second, and the
 * hand-off latency: from the holder's release call to the next holder's start.
 */
export const hotKeyScenario: Scenario = {
  id: 2,
  title: 'One hot key, 100 concurrent waiters, one process',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, waiters, warmupMs, durationMs, drainTimeoutMs } = config.hotKey;
    const entries: ResultEntry[] = [];
    for (const backend of ['memory', 'redis', 'postgres', 'mysql'] as const) {
      log(`  [2] ${BACKEND_LABEL[backend]}`);
      const specs = SUBJECTS[backend].filter((s) => s.canWait);
      const unavailable = await unavailableContenders(context.services, backend, specs, waiters);
      const outcomes = await withContenderHosts(2, backend, context.subjects, (hosts) =>
        interleave(
          specs.map((s) => s.id),
          rounds,
          async (id, round): Promise<Sample> => {
            if (unavailable.has(id)) return { metrics: {}, failure: unavailable.get(id) };
            return hosts.measure(
              id,
              round,
              { waiters, warmupMs, durationMs, drainTimeoutMs },
              warmupMs + durationMs + drainTimeoutMs + 60_000,
            );
          },
          log,
        ),
      );
      const title = `2. Hot key, ${waiters} waiters, 1 process (${BACKEND_LABEL[backend]})`;
      const params = `${waiters} concurrent waiters looping on one key in one process, empty critical section; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`;
      entries.push(
        ...handoffEntries({ scenario: 2, backend, title, params, specs, outcomes }),
        ...costEntries({ scenario: 2, backend, title, params, specs, outcomes }),
      );
    }
    return entries;
  },
};

/** One round of one contender (in its own process). */
export function hotKeyRound(
  subject: LockSubject,
  round: number,
  id: string,
  params: { waiters: number; warmupMs: number; durationMs: number; drainTimeoutMs: number },
): Promise<Sample> {
  return measureHotKey(subject, `hot${round}:${id}`, params.waiters, params.warmupMs, params.durationMs, params.drainTimeoutMs);
}

/** Runs `waiters` loops on one key; hand-offs are those whose critical section starts in the window. */
export async function measureHotKey(
  subject: LockSubject,
  key: string,
  waiters: number,
  warmupMs: number,
  durationMs: number,
  drainTimeoutMs: number,
): Promise<Sample> {
  const sections = new CriticalSections();
  const from = now() + warmupMs;
  const to = from + durationMs;
  const failures: string[] = [];
  const critical = (): void => {
    const start = now();
    sections.record(start, now());
  };
  const loop = async (): Promise<void> => {
    // Time is checked on every turn: a lock that hands over in microtasks never lets a timer fire.
    while (now() < to) {
      try {
        await subject.withLock(key, critical);
      } catch (error) {
        failures.push(describeError(error));
        return; // this waiter gave up
      }
    }
  };
  const all = Promise.all(Array.from({ length: waiters }, loop));
  try {
    await withTimeout(all, to - now() + drainTimeoutMs, `waiters did not finish within ${drainTimeoutMs} ms after the window`);
  } catch (error) {
    failures.push(describeError(error));
  }
  await sleep(0);
  const stats = sections.analyse(from, to);
  const metrics = { handoffsPerSec: stats.handoffsPerSec, p50: stats.p50, p99: stats.p99 };
  if (failures.length) return { metrics, failure: `${failures.length} of ${waiters} waiters gave up or erred (${failures[0]})` };
  if (stats.overlaps)
    return { metrics, failure: `mutual exclusion broken: ${stats.overlaps} critical sections overlapped their predecessor` };
  if (stats.count === 0) return { metrics, failure: 'no hand-off in the measuring window' };
  return { metrics };
}
