import { withContenderHosts } from '../lib/contender-hosts';
import { measureCallers, windowMetrics } from '../lib/measuring-window';
import { interleave, type Sample } from '../lib/interleave';
import { buildEntry, GROUP_OF, type ResultEntry } from '../report/results';
import { BACKEND_LABEL, KEY_SET_SUBJECTS } from '../subjects';
import type { LockSubject } from '../subjects/subject';
import { costEntries } from './cost-entries';
import { type Scenario, type ScenarioContext, unavailableContenders } from './scenario';
import { CPU_NOTE } from './uncontended.scenario';

// A type, not an interface: it passes as the worker's `Record<string, unknown>` of round parameters.
export type TransferParams = {
  callers: number;
  accounts: number;
  warmupMs: number;
  durationMs: number;
  drainTimeoutMs: number;
};

/**
 * 7. Two keys at once: money transfers between random pairs of a few accounts, several
 * callers at once in one process, each transfer holding both accounts' keys. This
 * library's `lockService.run([from, to], fn)` beside what users would write instead:
 * a peer's own multi-key call (redlock's resources array, async-lock's key array) or
 * nested single-key locks in sorted order (async-mutex, redis-semaphore, advisory
 * locks, named locks). Transfers/s, latency per transfer, CPU per transfer and, on
 * Redis and PostgreSQL, the backend work per transfer.
 */
export const transferScenario: Scenario = {
  id: 7,
  title: 'Two-key transfers between a few accounts, several callers',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, callers, accounts, warmupMs, durationMs, drainTimeoutMs } = config.transfer;
    const entries: ResultEntry[] = [];
    for (const backend of ['memory', 'redis', 'postgres', 'mysql'] as const) {
      log(`  [7] ${BACKEND_LABEL[backend]}`);
      const specs = KEY_SET_SUBJECTS[backend];
      const unavailable = await unavailableContenders(context.services, backend, specs, callers);
      const params: TransferParams = { callers, accounts, warmupMs, durationMs, drainTimeoutMs };
      const outcomes = await withContenderHosts(7, backend, context.subjects, (hosts) =>
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
      const title = `7. Two-key transfers, ${accounts} accounts, ${callers} callers (${BACKEND_LABEL[backend]})`;
      const described = `${callers} concurrent callers in one process, each looping: a transfer between a random pair of ${accounts} accounts (both directions), holding both keys; the section reads both balances, yields one event-loop turn, writes both; ${durationMs} ms after ${warmupMs} ms warm-up; median of ${rounds} rounds`;
      const common = { scenario: 7, group: GROUP_OF[backend], params: described, contenders: specs, outcomes };
      const base = `7.${backend}.keys`;
      entries.push(
        buildEntry({
          ...common,
          id: `${base}.transfers`,
          name: `${title} — transfers/s`,
          metric: 'transfersPerSec',
          unit: 'transfers/s',
          betterIs: 'higher',
        }),
        buildEntry({ ...common, id: `${base}.p50`, name: `${title} — latency p50`, metric: 'p50Ms', unit: 'ms', betterIs: 'lower' }),
        buildEntry({ ...common, id: `${base}.p99`, name: `${title} — latency p99`, metric: 'p99Ms', unit: 'ms', betterIs: 'lower' }),
        buildEntry({
          ...common,
          id: `${base}.cpu`,
          name: `${title} — CPU per transfer`,
          metric: 'cpuMicrosPerOp',
          unit: 'µs',
          betterIs: 'lower',
          notes: [CPU_NOTE],
        }),
        ...costEntries({ scenario: 7, backend, title, params: described, specs, outcomes, variant: 'keys', per: 'transfer' }),
      );
    }
    return entries;
  },
};

/**
 * One round of one contender (in its own process). Each section checks that neither of
 * its accounts is in another section (mutual exclusion per key) and the total is
 * checked at the end (money conserved): a contender that breaks either is reported as
 * failed, not measured. The window is lib/measuring-window.ts's.
 */
export async function transferRound(subject: LockSubject, round: number, id: string, params: TransferParams): Promise<Sample> {
  const withLocks = subject.withLocks?.bind(subject);
  if (!withLocks) return { metrics: {}, failure: `${id} has no way to hold several keys` };
  const { callers, accounts, warmupMs, durationMs, drainTimeoutMs } = params;
  const keys = Array.from({ length: accounts }, (_, i) => `t${round}:account:${i}`);
  const balances = new Array<number>(accounts).fill(1000);
  const inSection = new Array<boolean>(accounts).fill(false);
  let overlaps = 0;
  const transfer = async (): Promise<void> => {
    const a = Math.floor(Math.random() * accounts);
    let b = Math.floor(Math.random() * (accounts - 1));
    if (b >= a) b++;
    const amount = 1 + Math.floor(Math.random() * 10);
    await withLocks([keys[a], keys[b]], async () => {
      if (inSection[a] || inSection[b]) overlaps++;
      inSection[a] = inSection[b] = true;
      const fromBalance = balances[a];
      const toBalance = balances[b];
      // Where a real transfer reads the balances from its store: other callers run meanwhile.
      await new Promise<void>((resolve) => setImmediate(resolve));
      balances[a] = fromBalance - amount;
      balances[b] = toBalance + amount;
      inSection[a] = inSection[b] = false;
    });
  };
  const measured = await measureCallers(callers, { warmupMs, durationMs, drainTimeoutMs }, transfer);
  const { failures, ops: transfers } = measured;
  const metrics = windowMetrics(measured, 'transfersPerSec');
  const total = balances.reduce((sum, balance) => sum + balance, 0);
  if (failures.length) return { metrics, failure: `${failures.length} of ${callers} callers gave up or erred (${failures[0]})` };
  if (overlaps) return { metrics, failure: `mutual exclusion broken: ${overlaps} sections found an account already in a section` };
  if (total !== accounts * 1000) return { metrics, failure: `money not conserved: ${total} instead of ${accounts * 1000}` };
  if (!transfers) return { metrics, failure: 'no transfer completed in the measuring window' };
  return { metrics };
}
