import { sleep } from '../lib/clock';
import { withContenderHosts } from '../lib/contender-hosts';
import { measureCallers, windowMetrics } from '../lib/measuring-window';
import { interleave, type Outcome, type Sample } from '../lib/interleave';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import { BACKEND_LABEL, PERMIT_SUBJECTS, SHARED_SUBJECTS } from '../subjects';
import type { Backend, LockSubject, SubjectSpec } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { type Scenario, type ScenarioContext, unavailableContenders } from './scenario';
import { CPU_NOTE } from './uncontended.scenario';

// A type, not an interface: it passes as the worker's `Record<string, unknown>` of round parameters.
export type HoldersParams = {
  /** `permits`: every caller takes one of `permits` places; `shared`: readers shared, one call in `writeEvery` a writer. */
  shape: 'permits' | 'shared';
  callers: number;
  permits: number;
  writeEvery: number;
  /** How long a section waits for its "I/O" (a timer): what lets several holders overlap usefully. */
  sectionMs: number;
  warmupMs: number;
  durationMs: number;
  drainTimeoutMs: number;
};

/**
 * 8. Several holders of one key: `callers` callers of one hot key in one process, each
 * section waiting `sectionMs` on a timer (the I/O a capped section does).
 * `permits`: `run(key, fn, { concurrency: permits })` beside a peer's own semaphore
 * (async-mutex's, redis-semaphore's `Semaphore`). `shared`: 1 call in `writeEvery`
 * writes, the others read — ours with `{ shared: true }` for the reads, the peers with
 * their plain mutex for everything (what users of a library without readers do).
 * Sections/s, latency, CPU per section and the backend work per section.
 */
export const holdersScenario: Scenario = {
  id: 8,
  title: 'Several holders of one key: N at a time, shared readers',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, callers, permits, writeEvery, sectionMs, warmupMs, durationMs, drainTimeoutMs } = config.holders;
    const entries: ResultEntry[] = [];
    for (const shape of ['permits', 'shared'] as const) {
      for (const backend of ['memory', 'redis', 'postgres'] as const) {
        log(`  [8] ${shape}, ${BACKEND_LABEL[backend]}`);
        const specs = (shape === 'permits' ? PERMIT_SUBJECTS : SHARED_SUBJECTS)[backend];
        const unavailable = await unavailableContenders(context.services, backend, specs, callers);
        const params: HoldersParams = { shape, callers, permits, writeEvery, sectionMs, warmupMs, durationMs, drainTimeoutMs };
        const outcomes = await withContenderHosts(8, backend, context.subjects, (hosts) =>
          interleave(
            specs.map((s) => s.id),
            rounds,
            async (id, round): Promise<Sample> => {
              if (unavailable.has(id)) return { metrics: {}, failure: unavailable.get(id) };
              return hosts.measure(id, round, { ...params }, warmupMs + durationMs + drainTimeoutMs + 60_000);
            },
            log,
          ),
        );
        entries.push(...holdersEntries(shape, backend, specs, outcomes, params, rounds));
      }
    }
    return entries;
  },
};

function holdersEntries(
  shape: 'permits' | 'shared',
  backend: Backend,
  specs: SubjectSpec[],
  outcomes: ReadonlyMap<string, Outcome>,
  params: HoldersParams,
  rounds: number,
): ResultEntry[] {
  const { callers, permits, writeEvery, sectionMs, warmupMs, durationMs } = params;
  const title =
    shape === 'permits'
      ? `8. N = ${permits} per key, ${callers} callers (${BACKEND_LABEL[backend]})`
      : `8. Shared reads, 1 write in ${writeEvery}, ${callers} callers (${BACKEND_LABEL[backend]})`;
  const described =
    shape === 'permits'
      ? `${callers} concurrent callers of one key in one process, each looping: hold one of ${permits} places, wait ${sectionMs} ms on a timer, let go; a recorder fails a contender that lets more than ${permits} in; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`
      : `${callers} concurrent callers of one key in one process, each looping: 1 call in ${writeEvery} writes (alone), the others read (ours: shared; a plain mutex: alone), each waiting ${sectionMs} ms on a timer; a recorder fails a contender that lets a writer beside anyone; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`;
  const common = { scenario: 8, group: GROUP_OF[backend], params: described, contenders: specs, outcomes };
  const base = `8.${backend}.${shape}`;
  return [
    buildEntry({
      ...common,
      id: `${base}.ops`,
      name: `${title} — sections/s`,
      metric: 'opsPerSec',
      unit: 'sections/s',
      betterIs: 'higher',
    }),
    buildEntry({ ...common, id: `${base}.p50`, name: `${title} — latency p50`, metric: 'p50Ms', unit: 'ms', betterIs: 'lower' }),
    buildEntry({ ...common, id: `${base}.p99`, name: `${title} — latency p99`, metric: 'p99Ms', unit: 'ms', betterIs: 'lower' }),
    buildEntry({
      ...common,
      id: `${base}.cpu`,
      name: `${title} — CPU per section`,
      metric: 'cpuMicrosPerOp',
      unit: 'µs',
      betterIs: 'lower',
      notes: [CPU_NOTE],
    }),
    ...costEntries({ scenario: 8, backend, title, params: described, specs, outcomes, variant: shape, per: 'section' }),
  ];
}

/**
 * One round of one contender (in its own process). The recorder counts who is inside:
 * more than `permits` at once (permits), or a writer beside anyone (shared), fails the
 * contender instead of measuring it.
 */
export async function holdersRound(subject: LockSubject, round: number, id: string, params: HoldersParams): Promise<Sample> {
  const { shape, callers, permits, writeEvery, sectionMs, warmupMs, durationMs, drainTimeoutMs } = params;
  const withPermit = subject.withPermit?.bind(subject);
  if (shape === 'permits' && !withPermit) return { metrics: {}, failure: `${id} has no N-at-a-time lock` };
  const key = `h${round}:${shape}`;
  let inside = 0;
  let writers = 0;
  let mostInside = 0;
  let broken = 0;
  let calls = 0;
  const section = (writer: boolean) => async (): Promise<void> => {
    inside++;
    if (writer) writers++;
    mostInside = Math.max(mostInside, inside);
    if (shape === 'permits' ? inside > permits : writers > 0 && inside > 1) broken++;
    await sleep(sectionMs);
    inside--;
    if (writer) writers--;
  };
  const once = async (): Promise<void> => {
    const writer = shape === 'shared' && calls++ % writeEvery === 0;
    if (shape === 'permits') await withPermit!(key, permits, section(false));
    else if (writer || !subject.withShared) await subject.withLock(key, section(writer));
    else await subject.withShared(key, section(false));
  };
  const measured = await measureCallers(callers, { warmupMs, durationMs, drainTimeoutMs }, once);
  const { failures, ops: sections } = measured;
  const metrics = windowMetrics(measured, 'opsPerSec');
  if (failures.length) return { metrics, failure: `${failures.length} of ${callers} callers gave up or erred (${failures[0]})` };
  if (broken)
    return {
      metrics,
      failure:
        shape === 'permits'
          ? `bound broken: ${broken} sections began with more than ${permits} inside (${mostInside} at most)`
          : `a writer was beside another section ${broken} times`,
    };
  if (!sections) return { metrics, failure: 'no section completed in the measuring window' };
  return { metrics };
}
