import { now } from '../lib/clock';
import { interleave, type Outcome, type Sample } from '../lib/interleave';
import { withContenderHosts } from '../lib/contender-hosts';
import { NET_DELAY_US, startDelayProxy } from '../lib/delay-proxy';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import { BACKEND_LABEL, SUBJECTS, VARIANTS } from '../subjects';
import type { Backend, LockSubject, SubjectContext } from '../subjects/subject';
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
    const entries: ResultEntry[] = [];
    for (const backend of ['memory', 'redis', 'postgres', 'mysql'] as const)
      entries.push(...(await measure(context, backend, context.subjects, '', backend === 'redis' ? ['replicas'] : [])));
    // The network variant: every contender's backend connection through a proxy adding 0.25 ms each way,
    // so the round trips per section count as they would between hosts.
    for (const backend of ['redis', 'postgres'] as const) {
      const url = backend === 'redis' ? context.subjects.redisUrl : context.subjects.databaseUrl;
      let proxy;
      try {
        proxy = await startDelayProxy(url);
      } catch (error) {
        context.log(`  [1] ${BACKEND_LABEL[backend]} over the network: ${(error as Error).message}`);
        const failed = { reachable: false, error: (error as Error).message };
        entries.push(
          ...(await measure({ ...context, services: { ...context.services, [backend]: failed } }, backend, context.subjects, 'net')),
        );
        continue;
      }
      try {
        const subjects: SubjectContext = { ...context.subjects, [backend === 'redis' ? 'redisUrl' : 'databaseUrl']: proxy.via(url) };
        entries.push(...(await measure(context, backend, subjects, 'net')));
      } finally {
        await proxy.stop();
      }
    }
    return entries;
  },
};

/** What the CPU rows measure (scenarios 1 and 7). */
export const CPU_NOTE =
  "CPU per operation: the contender process's user + system CPU time (process.cpuUsage) over the measuring window ÷ the operations in it — the client side only, not the backend server's. Each contender runs in a process of its own, so nobody else's work is in it; lower is better, and a floor's value is the least any client of these commands spends.";

/** `variants`: variants of ours (VARIANTS) run in the same rounds and reported under ids of their own (`1.redis.replicas.*`). */
async function measure(
  context: ScenarioContext,
  backend: Backend,
  subjects: SubjectContext,
  variant: '' | 'net',
  variants: readonly string[] = [],
): Promise<ResultEntry[]> {
  const { config, log } = context;
  const { rounds, warmupMs, durationMs } = config.uncontended;
  const net = variant === 'net';
  log(`  [1] ${BACKEND_LABEL[backend]}${net ? ` over the network (+${NET_DELAY_US / 1000} ms each way)` : ''}`);
  const specs = SUBJECTS[backend];
  const extra = variants.map((name) => [name, VARIANTS[backend][name]] as const);
  const down = backendDown(context.services, backend);
  const outcomes = await withContenderHosts(1, backend, subjects, (hosts) =>
    interleave(
      [...specs, ...extra.map(([, spec]) => spec)].map((s) => s.id),
      rounds,
      async (id, round): Promise<Sample> => {
        if (down) return { metrics: {}, failure: down };
        return hosts.measure(id, round, { warmupMs, durationMs }, warmupMs + durationMs + 60_000);
      },
      log,
    ),
  );
  const params = `1 caller, sequential, new key per operation; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds${
    net
      ? `; every contender's backend connection through a proxy delaying each byte ${NET_DELAY_US / 1000} ms each way (bench/net/delay-proxy.c)`
      : ''
  }`;
  const base = `1.${backend}${net ? '.net' : ''}`;
  const title = `1. Uncontended acquire+release, distinct keys (${BACKEND_LABEL[backend]}${net ? ', over a 0.25 ms-each-way path' : ''})`;
  const common = { scenario: 1, group: GROUP_OF[backend], params, contenders: specs, outcomes: outcomes as Map<string, Outcome> };
  const own = [
    buildEntry({ ...common, id: `${base}.ops`, name: title, metric: 'opsPerSec', unit: 'ops/s', betterIs: 'higher' }),
    buildEntry({ ...common, id: `${base}.p50`, name: `${title} — latency p50`, metric: 'p50Ms', unit: 'ms', betterIs: 'lower' }),
    buildEntry({ ...common, id: `${base}.p99`, name: `${title} — latency p99`, metric: 'p99Ms', unit: 'ms', betterIs: 'lower' }),
    buildEntry({
      ...common,
      id: `${base}.cpu`,
      name: `${title} — CPU per operation`,
      metric: 'cpuMicrosPerOp',
      unit: 'µs',
      betterIs: 'lower',
      notes: [CPU_NOTE],
    }),
    ...costEntries({ scenario: 1, backend, title, params, specs, outcomes, variant: net ? 'net' : undefined }),
  ];
  // A variant of ours against the same peers, in the same rounds (as scenario 3 does).
  const more = extra.flatMap(([name, spec]) => {
    const against = [spec, ...specs.filter((s) => s.kind !== 'ours')];
    const named = `${title}, ${spec.label}`;
    const v = { ...common, contenders: against };
    return [
      buildEntry({ ...v, id: `${base}.${name}.ops`, name: named, metric: 'opsPerSec', unit: 'ops/s', betterIs: 'higher' }),
      buildEntry({ ...v, id: `${base}.${name}.p50`, name: `${named} — latency p50`, metric: 'p50Ms', unit: 'ms', betterIs: 'lower' }),
      buildEntry({ ...v, id: `${base}.${name}.p99`, name: `${named} — latency p99`, metric: 'p99Ms', unit: 'ms', betterIs: 'lower' }),
      buildEntry({
        ...v,
        id: `${base}.${name}.cpu`,
        name: `${named} — CPU per operation`,
        metric: 'cpuMicrosPerOp',
        unit: 'µs',
        betterIs: 'lower',
        notes: [CPU_NOTE],
      }),
      ...costEntries({ scenario: 1, backend, title: named, params, specs: against, outcomes, variant: name }),
    ];
  });
  return [...own, ...more];
}

/** One round of one contender (in its own process): fresh keys one after another, warm-up then `durationMs`. */
export async function uncontendedRound(
  subject: LockSubject,
  round: number,
  id: string,
  params: { warmupMs: number; durationMs: number },
): Promise<Sample> {
  const prefix = `u${round}:${id}:`;
  let sequence = 0;
  // Warm-up: at least 20 operations (the first ones connect and load scripts), and warmupMs.
  await loopFor(subject, prefix, () => sequence++, params.warmupMs, 20);
  const latencies: number[] = [];
  // The process's CPU time (user + system) over the window: on loopback the path is CPU-bound, and
  // operations/s of two processes on a busy 2-core host move with whatever else runs; CPU per operation does not.
  const cpuBefore = process.cpuUsage();
  const { ops, elapsedMs } = await loopFor(subject, prefix, () => sequence++, params.durationMs, 0, latencies);
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    metrics: { opsPerSec: ops / (elapsedMs / 1000), p50Ms: at(0.5), p99Ms: at(0.99), cpuMicrosPerOp: (cpu.user + cpu.system) / ops },
  };
}

/** Acquire + release fresh keys, one after another, for `ms`; each operation's time (ms) into `latencies` when given. */
async function loopFor(
  subject: LockSubject,
  prefix: string,
  next: () => number,
  ms: number,
  minOps = 0,
  latencies?: number[],
): Promise<{ ops: number; elapsedMs: number }> {
  const start = now();
  const end = start + ms;
  let ops = 0;
  let t = start;
  while (t < end || ops < minOps) {
    await subject.withLock(prefix + next(), noop);
    ops++;
    const after = now();
    latencies?.push(after - t);
    t = after;
  }
  return { ops, elapsedMs: t - start };
}
