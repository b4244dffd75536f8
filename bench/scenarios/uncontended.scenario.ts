import { now } from '../lib/clock';
import { interleave, type Outcome, type Sample } from '../lib/interleave';
import { withContenderHosts } from '../lib/contender-hosts';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import { BACKEND_LABEL, SUBJECTS } from '../subjects';
import type { LockSubject } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { backendDown, type Scenario, type ScenarioContext } from './scenario';

const noop = (): void => undefined;

/**
 * 1. Uncontended acquire + release on distinct keys: one caller, one operation at
 * a time, a fresh key each time. What a lock costs when nobody else wants it —
 * for Redis and PostgreSQL, compared with the two bare round trips (the floor).
 */
export const uncontendedScenario: Scenario = {
  id: 1,
  title: 'Uncontended acquire + release, distinct keys',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, warmupMs, durationMs } = config.uncontended;
    const entries: ResultEntry[] = [];
    for (const backend of ['memory', 'redis', 'postgres'] as const) {
      log(`  [1] ${BACKEND_LABEL[backend]}`);
      const specs = SUBJECTS[backend];
      const down = backendDown(context.services, backend);
      const outcomes = await withContenderHosts(1, backend, context.subjects, (hosts) =>
        interleave(
          specs.map((s) => s.id),
          rounds,
          async (id, round): Promise<Sample> => {
            if (down) return { metrics: {}, failure: down };
            return hosts.measure(id, round, { warmupMs, durationMs }, warmupMs + durationMs + 60_000);
          },
          log,
        ),
      );
      const params = `1 caller, sequential, new key per operation; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`;
      entries.push(
        buildEntry({
          id: `1.${backend}.ops`,
          scenario: 1,
          group: GROUP_OF[backend],
          name: `1. Uncontended acquire+release, distinct keys (${BACKEND_LABEL[backend]})`,
          metric: 'opsPerSec',
          unit: 'ops/s',
          betterIs: 'higher',
          params,
          contenders: specs,
          outcomes: outcomes as Map<string, Outcome>,
        }),
        ...costEntries({ scenario: 1, backend, title: `1. Uncontended (${BACKEND_LABEL[backend]})`, params, specs, outcomes }),
      );
    }
    return entries;
  },
};

/** One round of one contender (in its own process): fresh keys one after another, warm-up then `durationMs`. */
export async function uncontendedRound(subject: LockSubject, round: number, id: string, params: { warmupMs: number; durationMs: number }): Promise<Sample> {
  const prefix = `u${round}:${id}:`;
  let sequence = 0;
  // Warm-up: at least 20 operations (the first ones connect and load scripts), and warmupMs.
  await loopFor(subject, prefix, () => sequence++, params.warmupMs, 20);
  const { ops, elapsedMs } = await loopFor(subject, prefix, () => sequence++, params.durationMs);
  return { metrics: { opsPerSec: ops / (elapsedMs / 1000) } };
}

/** Acquire + release fresh keys, one after another, for `ms`. */
async function loopFor(subject: LockSubject, prefix: string, next: () => number, ms: number, minOps = 0): Promise<{ ops: number; elapsedMs: number }> {
  const start = now();
  const end = start + ms;
  let ops = 0;
  let t = start;
  while (t < end || ops < minOps) {
    await subject.withLock(prefix + next(), noop);
    ops++;
    t = now();
  }
  return { ops, elapsedMs: t - start };
}
