import { formatNumber, formatRatio } from './format';
import type { ResultEntry, TargetResult } from './results';

type Check =
  | { kind: 'vs-peer'; entry: string; min: number }
  | { kind: 'max'; entry: string; max: number; unit: string }
  | { kind: 'vs-floor'; entry: string; min: number }
  | { kind: 'overhead'; entry: string; maxPct: number }
  | { kind: 'near-zero'; entry: string; tolerance: number; unit: string };

/** The targets of issue 6, each checked against one entry of this run. */
const TARGETS: Array<{ id: string; description: string; check: Check }> = [
  { id: 'memory-uncontended', description: 'In-memory, uncontended (1): ≥ 1.5× the best peer', check: { kind: 'vs-peer', entry: '1.memory.ops', min: 1.5 } },
  { id: 'memory-hot', description: 'In-memory, hot key (2): hand-offs/s ≥ 1.5× the best peer', check: { kind: 'vs-peer', entry: '2.memory.handoffs', min: 1.5 } },
  { id: 'redis-hot', description: 'Redis, hot key, 1 process (2): hand-offs/s ≥ 3× the best peer', check: { kind: 'vs-peer', entry: '2.redis.handoffs', min: 3 } },
  { id: 'redis-hot-p99', description: 'Redis, hot key, 1 process (2): hand-off p99 ≤ 3 ms', check: { kind: 'max', entry: '2.redis.p99', max: 3, unit: 'ms' } },
  { id: 'redis-processes', description: 'Redis, hot key, 4 processes (3): hand-offs/s ≥ 3× the best peer', check: { kind: 'vs-peer', entry: '3.redis.handoffs', min: 3 } },
  { id: 'redis-processes-p99', description: 'Redis, hot key, 4 processes (3): hand-off p99 ≤ 3 ms', check: { kind: 'max', entry: '3.redis.p99', max: 3, unit: 'ms' } },
  { id: 'redis-floor', description: 'Redis, uncontended (1): ≥ 0.8× the physical floor', check: { kind: 'vs-floor', entry: '1.redis.ops', min: 0.8 } },
  { id: 'postgres-floor', description: 'PostgreSQL, uncontended (1): ≥ 0.8× the physical floor', check: { kind: 'vs-floor', entry: '1.postgres.ops', min: 0.8 } },
  { id: 'http-memory', description: 'HTTP, in-memory, distinct keys (6): overhead ≤ 5 %', check: { kind: 'overhead', entry: '6.memory.distinct.rps', maxPct: 5 } },
  { id: 'http-redis', description: 'HTTP, Redis, distinct keys (6): overhead ≤ 20 %', check: { kind: 'overhead', entry: '6.redis.distinct.rps', maxPct: 20 } },
  { id: 'retained', description: 'Memory (5): heap retained per released key ≈ 0 (|x| ≤ 1 byte/key)', check: { kind: 'near-zero', entry: '5.memory.retained', tolerance: 1, unit: 'bytes/key' } },
];

export function evaluateTargets(entries: readonly ResultEntry[]): TargetResult[] {
  return TARGETS.map(({ id, description, check }) => ({ id, description, ...evaluate(entries.find((e) => e.id === check.entry), check) }));
}

function evaluate(entry: ResultEntry | undefined, check: Check): Omit<TargetResult, 'id' | 'description'> {
  if (!entry) return { status: 'not measured', measured: 'scenario not run' };
  const ours = entry.ours;
  if (ours.value === null) return { status: 'not measured', measured: `this library failed: ${ours.reason}` };
  const value = `${formatNumber(ours.value)} ${entry.unit}`;
  switch (check.kind) {
    case 'vs-peer': {
      const best = entry.peers.find((p) => p.id === entry.bestPeer);
      if (!best) return { status: 'met', measured: `${value}; every peer failed` };
      const ratio = entry.ratioToBestPeer!;
      const measured = `${formatRatio(ratio)} (${value} vs ${best.label} ${formatNumber(best.value!)} ${entry.unit})`;
      return ratio >= check.min
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${formatRatio(ratio / check.min)} of the target; needs ${formatRatio(check.min / ratio)} more` };
    }
    case 'max':
      return ours.value <= check.max
        ? { status: 'met', measured: value }
        : { status: 'missed', measured: value, gap: `${formatNumber(ours.value - check.max)} ${check.unit} over (${formatRatio(ours.value / check.max)} the limit)` };
    case 'vs-floor': {
      const floor = entry.peers.find((p) => p.kind === 'floor');
      if (!floor || floor.value === null) return { status: 'not measured', measured: `${value}; the floor failed: ${floor?.reason ?? 'not run'}` };
      const ratio = entry.ratioToFloor!;
      const measured = `${formatRatio(ratio)} (${value} vs floor ${formatNumber(floor.value)} ${entry.unit})`;
      return ratio >= check.min
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${(ratio * 100).toFixed(1)} % of the floor where ${check.min * 100} % is the target` };
    }
    case 'overhead': {
      const baseline = entry.peers.find((p) => p.kind === 'baseline');
      if (!baseline || baseline.value === null || entry.overheadPct == null) return { status: 'not measured', measured: `${value}; undecorated baseline failed` };
      const pct = entry.overheadPct;
      const fresh = entry.peers.find((p) => p.id === 'fresh' && p.value !== null);
      const intercepted = entry.peers.find((p) => p.id === 'intercepted' && p.value !== null);
      const vsFresh =
        (fresh ? `; ${formatNumber((1 - ours.value / fresh.value!) * 100)} % vs an app where @Serialized never ran (${formatNumber(fresh.value!)} ${entry.unit})` : '') +
        (intercepted ? `; ${formatNumber((1 - ours.value / intercepted.value!) * 100)} % vs the handler behind a no-op interceptor (${formatNumber(intercepted.value!)} ${entry.unit})` : '');
      const measured = `${formatNumber(pct)} % (${value} vs undecorated ${formatNumber(baseline.value)} ${entry.unit} in the same app${vsFresh})`;
      return pct <= check.maxPct ? { status: 'met', measured } : { status: 'missed', measured, gap: `${formatNumber(pct - check.maxPct)} points over` };
    }
    case 'near-zero':
      return Math.abs(ours.value) <= check.tolerance
        ? { status: 'met', measured: value }
        : { status: 'missed', measured: value, gap: `${formatNumber(Math.abs(ours.value) - check.tolerance)} ${check.unit} over the tolerance` };
  }
}
