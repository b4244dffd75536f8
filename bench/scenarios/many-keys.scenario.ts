import { now, sleep } from '../lib/clock';
import { describeError, interleave, type Sample } from '../lib/interleave';
import { withContenderHosts } from '../lib/contender-hosts';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import { BACKEND_LABEL, SUBJECTS } from '../subjects';
import type { LockSubject } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { type Scenario, type ScenarioContext, unavailableContenders } from './scenario';

const noop = (): void => undefined;

/**
 * 4. Many keys at once: K distinct keys, 8 operations on each started together
 * (8·K callers in flight, each key contended 8-deep). Operations per second from
 * the first call to the last release.
 */
export const manyKeysScenario: Scenario = {
  id: 4,
  title: '10,000 distinct keys, 8 concurrent operations each',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds: roundsOf, keys: keysOf, opsPerKey, timeoutMs } = config.manyKeys;
    const entries: ResultEntry[] = [];
    for (const backend of ['memory', 'redis', 'postgres'] as const) {
      const keys = keysOf[backend];
      const rounds = roundsOf[backend];
      log(`  [4] ${BACKEND_LABEL[backend]} (${keys} keys × ${opsPerKey})`);
      const specs = SUBJECTS[backend].filter((s) => s.canWait);
      const unavailable = await unavailableContenders(context.services, backend, specs, keys * opsPerKey);
      const outcomes = await withContenderHosts(4, backend, context.subjects, (hosts) =>
        interleave(
          specs.map((s) => s.id),
          rounds,
          async (id, round): Promise<Sample> => {
            if (unavailable.has(id)) return { metrics: {}, failure: unavailable.get(id) };
            // Budget: the warm-up's and the burst's give-up times, their stragglers' grace, and start-up.
            return hosts.measure(id, round, { keys, opsPerKey, timeoutMs }, 2 * (timeoutMs + 15_000) + 60_000);
          },
          log,
        ),
      );
      const scaled =
        keys !== 10_000
          ? [`${keys} keys instead of 10,000 in this ${config.mode} run (a --quick run scales the key count down to stay under a minute).`]
          : [];
      if (rounds === 1)
        scaled.push(
          'One round only: the polling peers need about 25 s per 80,000 operations, and the full run has to stay under 5 minutes.',
        );
      entries.push(
        buildEntry({
          id: `4.${backend}.ops`,
          scenario: 4,
          group: GROUP_OF[backend],
          name: `4. ${keys.toLocaleString('en-US')} keys × ${opsPerKey} concurrent operations (${BACKEND_LABEL[backend]})`,
          metric: 'opsPerSec',
          unit: 'ops/s',
          betterIs: 'higher',
          params: `${keys} distinct keys, ${opsPerKey} operations on each started at once (${keys * opsPerKey} in flight), empty critical section; ${rounds === 1 ? 'one round' : `median of ${rounds} rounds`}`,
          contenders: specs,
          outcomes,
          notes: scaled,
        }),
        ...costEntries({
          scenario: 4,
          backend,
          title: `4. ${keys.toLocaleString('en-US')} keys × ${opsPerKey} (${BACKEND_LABEL[backend]})`,
          params: `${keys} distinct keys, ${opsPerKey} operations on each started at once`,
          specs,
          outcomes,
        }),
      );
    }
    return entries;
  },
};

/** One round of one contender (in its own process): a short warm-up burst, then the measured one. */
export async function manyKeysRound(
  subject: LockSubject,
  round: number,
  id: string,
  params: { keys: number; opsPerKey: number; timeoutMs: number },
): Promise<Sample> {
  const { keys, opsPerKey, timeoutMs } = params;
  // A short warm-up on a twentieth of the keys (JIT, connections, scripts loaded).
  const warm = await burst(subject, `mw${round}:${id}:`, Math.max(10, Math.floor(keys / 20)), opsPerKey, timeoutMs);
  if (warm.failure) return { metrics: {}, failure: warm.failure };
  return burst(subject, `m${round}:${id}:`, keys, opsPerKey, timeoutMs);
}

async function burst(subject: LockSubject, prefix: string, keys: number, opsPerKey: number, timeoutMs: number): Promise<Sample> {
  const start = now();
  let done = 0;
  const failures: string[] = [];
  const calls: Promise<void>[] = [];
  for (let k = 0; k < keys; k++) {
    const key = prefix + k;
    for (let j = 0; j < opsPerKey; j++) {
      calls.push(
        subject.withLock(key, noop).then(
          () => void done++,
          (error: unknown) => void failures.push(describeError(error)),
        ),
      );
    }
  }
  const total = calls.length;
  const all = Promise.all(calls);
  let timer: NodeJS.Timeout | undefined;
  const finished = await Promise.race([
    all.then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  const elapsedMs = now() - start;
  const metrics = { opsPerSec: done / (elapsedMs / 1000) };
  if (!finished) {
    // Let the stragglers give up on their own before the next contender runs (bounded).
    await Promise.race([all, sleep(15_000)]);
    return {
      metrics,
      failure: `did not finish ${total} operations within ${timeoutMs / 1000} s (${done} done${failures.length ? `, ${failures.length} failed: ${failures[0]}` : ''})`,
    };
  }
  if (failures.length) return { metrics, failure: `${failures.length} of ${total} operations gave up or erred (${failures[0]})` };
  return { metrics };
}
