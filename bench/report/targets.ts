import { formatNumber, formatRatio } from './format';
import type { ResultEntry, TargetResult } from './results';

type Check =
  | { kind: 'vs-peer'; entry: string; min: number }
  | { kind: 'max'; entry: string; max: number; unit: string }
  | { kind: 'min'; entry: string; min: number; unit: string; beside?: string }
  | { kind: 'vs-floor'; entry: string; min: number }
  | { kind: 'overhead'; entry: string; maxPct: number }
  | { kind: 'added'; entry: string; max: number }
  | { kind: 'cost-vs-peer'; entry: string; peerOf: string }
  | { kind: 'cost-vs-floor'; entry: string; max: number };

/**
 * The targets (ratios from one run, Node 24), each checked against one entry of this
 * run: the contended paths, the uncontended path and its network variant, and the CPU
 * the uncontended path and an HTTP request cost (on a busy host the CPU figures hold
 * where operations/s of two processes do not).
 */
const TARGETS: Array<{ id: string; description: string; check: Check }> = [
  {
    id: 'memory-uncontended',
    description: 'In-memory, uncontended (1): ≥ 2× the best peer',
    check: { kind: 'vs-peer', entry: '1.memory.ops', min: 2 },
  },
  {
    id: 'memory-hot',
    description: 'In-memory, hot key (2): hand-offs/s ≥ 1.5× the best peer',
    check: { kind: 'vs-peer', entry: '2.memory.handoffs', min: 1.5 },
  },
  {
    id: 'memory-many',
    description: 'In-memory, 10,000 keys × 8 (4): ≥ 2× the best peer',
    check: { kind: 'vs-peer', entry: '4.memory.ops', min: 2 },
  },
  {
    id: 'redis-uncontended',
    description: 'Redis, uncontended (1): ≥ 1.5× the best peer',
    check: { kind: 'vs-peer', entry: '1.redis.ops', min: 1.5 },
  },
  {
    id: 'redis-uncontended-commands',
    description: 'Redis, uncontended (1): ≤ 4 Redis commands per acquisition',
    check: { kind: 'max', entry: '1.redis.commands', max: 4, unit: 'commands/op' },
  },
  {
    id: 'redis-uncontended-net',
    description: 'Redis, uncontended, 0.25 ms each way (1): ≥ 1.8× the best peer',
    check: { kind: 'vs-peer', entry: '1.redis.net.ops', min: 1.8 },
  },
  {
    id: 'redis-hot',
    description: 'Redis, hot key, 1 process, 100 waiters (2): hand-offs/s ≥ 10× the best peer',
    check: { kind: 'vs-peer', entry: '2.redis.handoffs', min: 10 },
  },
  {
    id: 'redis-hot-p99',
    description: 'Redis, hot key, 1 process (2): hand-off p99 ≤ 1 ms',
    check: { kind: 'max', entry: '2.redis.p99', max: 1, unit: 'ms' },
  },
  {
    id: 'redis-processes',
    description: 'Redis, hot key, 4 processes × 25, strict order (3): hand-offs/s ≥ 1× the best peer',
    check: { kind: 'vs-peer', entry: '3.redis.handoffs', min: 1 },
  },
  {
    id: 'redis-processes-commands',
    description: 'Redis, hot key, 4 processes (3): no more Redis commands per acquisition than that best peer',
    check: { kind: 'cost-vs-peer', entry: '3.redis.commands', peerOf: '3.redis.handoffs' },
  },
  {
    id: 'redis-processes-p99',
    description: 'Redis, hot key, 4 processes (3): hand-off p99 ≤ 3 ms',
    check: { kind: 'max', entry: '3.redis.p99', max: 3, unit: 'ms' },
  },
  {
    id: 'redis-processes-cohort',
    description: 'Redis, hot key, 4 processes, cohort mode (3): hand-offs/s ≥ 3× the best peer',
    check: { kind: 'vs-peer', entry: '3.redis.cohort.handoffs', min: 3 },
  },
  {
    id: 'postgres-floor',
    description: 'PostgreSQL, uncontended (1): ≥ 1.2× the physical floor',
    check: { kind: 'vs-floor', entry: '1.postgres.ops', min: 1.2 },
  },
  {
    id: 'postgres-floor-net',
    description: 'PostgreSQL, uncontended, 0.25 ms each way (1): ≥ 1.8× the physical floor',
    check: { kind: 'vs-floor', entry: '1.postgres.net.ops', min: 1.8 },
  },
  {
    id: 'postgres-processes-cohort',
    description: 'PostgreSQL, hot key, 4 processes, cohort mode (3): ≥ 5,000 hand-offs/s (the default, strict, reported beside it)',
    check: { kind: 'min', entry: '3.postgres.cohort.handoffs', min: 5000, unit: 'hand-offs/s', beside: '3.postgres.handoffs' },
  },
  {
    id: 'http-memory',
    description: 'HTTP, in-memory, distinct keys (6): ≤ 10 % under a no-op interceptor',
    check: { kind: 'overhead', entry: '6.memory.distinct.rps', maxPct: 10 },
  },
  {
    id: 'http-redis',
    description: 'HTTP, Redis, distinct keys (6): ≤ 15 % under a no-op interceptor',
    check: { kind: 'overhead', entry: '6.redis.distinct.rps', maxPct: 15 },
  },
  {
    id: 'http-redis-cpu',
    description: 'HTTP, Redis, distinct keys (6): ≤ 30 µs more server CPU per request than a no-op interceptor',
    check: { kind: 'added', entry: '6.redis.distinct.server-cpu', max: 30 },
  },
  {
    id: 'redis-uncontended-cpu',
    description: 'Redis, uncontended (1): CPU per operation at most the best peer’s',
    check: { kind: 'vs-peer', entry: '1.redis.cpu', min: 1 },
  },
  {
    id: 'postgres-uncontended-cpu',
    description: 'PostgreSQL, uncontended (1): CPU per operation at most the floor’s + 20 %',
    check: { kind: 'cost-vs-floor', entry: '1.postgres.cpu', max: 1.2 },
  },
];

export function evaluateTargets(entries: readonly ResultEntry[]): TargetResult[] {
  return TARGETS.map(({ id, description, check }) => ({
    id,
    description,
    ...evaluate(
      entries.find((e) => e.id === check.entry),
      check,
      entries,
    ),
  }));
}

function evaluate(entry: ResultEntry | undefined, check: Check, entries: readonly ResultEntry[]): Omit<TargetResult, 'id' | 'description'> {
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
        : {
            status: 'missed',
            measured,
            gap: `${formatRatio(ratio / check.min)} of the target; needs ${formatRatio(check.min / ratio)} more`,
          };
    }
    case 'max':
      return ours.value <= check.max
        ? { status: 'met', measured: value }
        : {
            status: 'missed',
            measured: value,
            gap: `${formatNumber(ours.value - check.max)} ${check.unit} over (${formatRatio(ours.value / check.max)} the limit)`,
          };
    case 'vs-floor': {
      const floor = entry.peers.find((p) => p.kind === 'floor');
      if (!floor || floor.value === null)
        return { status: 'not measured', measured: `${value}; the floor failed: ${floor?.reason ?? 'not run'}` };
      const ratio = entry.ratioToFloor!;
      const measured = `${formatRatio(ratio)} (${value} vs floor ${formatNumber(floor.value)} ${entry.unit})`;
      return ratio >= check.min
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${(ratio * 100).toFixed(1)} % of the floor where ${check.min * 100} % is the target` };
    }
    case 'min': {
      const beside = check.beside === undefined ? undefined : entries.find((e) => e.id === check.beside);
      const besideValue = beside?.ours.value;
      const measured =
        beside === undefined
          ? value
          : `${value} (${beside.id}: ${besideValue === null || besideValue === undefined ? 'not measured' : `${formatNumber(besideValue)} ${beside.unit}`})`;
      return ours.value >= check.min
        ? { status: 'met', measured }
        : {
            status: 'missed',
            measured,
            gap: `${formatRatio(ours.value / check.min)} of the target; needs ${formatRatio(check.min / ours.value)} more`,
          };
    }
    case 'overhead': {
      // Against the same handler behind a no-op interceptor: what @Serialized adds to Nest's own interceptor pipeline.
      const noop = entry.peers.find((p) => p.id === 'intercepted');
      if (!noop || noop.value === null) return { status: 'not measured', measured: `${value}; the no-op-interceptor baseline failed` };
      const pct = (1 - ours.value / noop.value) * 100;
      const plain = entry.peers.find((p) => p.id === 'plain' && p.value !== null);
      const measured = `${formatNumber(pct)} % (${value} vs ${formatNumber(noop.value)} ${entry.unit} behind a no-op interceptor${plain ? `; ${formatNumber((1 - ours.value / plain.value!) * 100)} % vs the undecorated route` : ''})`;
      return pct <= check.maxPct
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${formatNumber(pct - check.maxPct)} points over` };
    }
    case 'added': {
      // What @Serialized adds on top of the same route behind a no-op interceptor, in the entry's unit.
      const noop = entry.peers.find((p) => p.id === 'intercepted');
      if (!noop || noop.value === null) return { status: 'not measured', measured: `${value}; the no-op-interceptor baseline failed` };
      const added = ours.value - noop.value;
      const measured = `+${formatNumber(added)} ${entry.unit} (${value} vs ${formatNumber(noop.value)} ${entry.unit} behind a no-op interceptor)`;
      return added <= check.max
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${formatNumber(added - check.max)} ${entry.unit} over` };
    }
    case 'cost-vs-floor': {
      // A lower-is-better cost (CPU per operation) as a multiple of the floor's.
      const floor = entry.peers.find((p) => p.kind === 'floor');
      if (!floor || floor.value === null)
        return { status: 'not measured', measured: `${value}; the floor failed: ${floor?.reason ?? 'not run'}` };
      const ratio = ours.value / floor.value;
      const measured = `${formatRatio(ratio)} the floor (${value} vs ${formatNumber(floor.value)} ${entry.unit})`;
      return ratio <= check.max
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${formatNumber((ratio - check.max) * 100)} points over ${formatRatio(check.max)}` };
    }
    case 'cost-vs-peer': {
      const reference = entries.find((e) => e.id === check.peerOf);
      const peerId = reference?.bestPeer;
      const peer = peerId ? entry.peers.find((p) => p.id === peerId) : undefined;
      if (!peer || peer.value === null) return { status: 'met', measured: `${value}; no peer completed ${check.peerOf}` };
      const measured = `${value} vs ${peer.label} ${formatNumber(peer.value)} ${entry.unit}`;
      return ours.value <= peer.value
        ? { status: 'met', measured }
        : { status: 'missed', measured, gap: `${formatRatio(ours.value / peer.value)} its commands` };
    }
  }
}
