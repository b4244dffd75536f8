import { median } from '../lib/stats';
import type { Outcome } from '../lib/interleave';
import type { Backend } from '../subjects/subject';

export type BetterIs = 'higher' | 'lower';
export type ContenderKind = 'ours' | 'peer' | 'floor' | 'baseline';
export type Group = 'in-memory' | 'redis' | 'postgres' | 'mysql' | 'http' | 'memory-footprint';

/** The result group of each backend's lock scenarios. */
export const GROUP_OF: Record<Backend, Group> = { memory: 'in-memory', redis: 'redis', postgres: 'postgres', mysql: 'mysql' };

export const GROUP_TITLES: Record<Group, string> = {
  'in-memory': 'In-memory (one process)',
  redis: 'Redis',
  postgres: 'PostgreSQL',
  mysql: 'MySQL / MariaDB',
  http: 'HTTP overhead (example app, autocannon)',
  'memory-footprint': 'Memory footprint (in-memory provider)',
};

/** One contender's value in one entry. */
export interface ContenderValue {
  id: string;
  label: string;
  kind: ContenderKind;
  settings?: string;
  status: 'ok' | 'failed';
  /** Median over the rounds (null when failed). */
  value: number | null;
  samples: number[];
  /** Why it failed (gave up, erred, could not run). */
  reason?: string;
}

/** One scenario × backend × metric: what `bench/results/latest.json` holds, one per line of the tables. */
export interface ResultEntry {
  id: string;
  scenario: number;
  group: Group;
  /** Human name: "2. Hot key, 100 waiters, 1 process — hand-offs/s". */
  name: string;
  metric: string;
  unit: string;
  betterIs: BetterIs;
  /** Parameters as run (key counts, durations, rounds). */
  params: string;
  ours: ContenderValue;
  /** Every other contender: peers, the physical floor, the undecorated baseline. Failed ones included. */
  peers: ContenderValue[];
  /** The best successful peer (kind `peer`), by this metric's direction. */
  bestPeer: string | null;
  /**
   * How many times better this library is than the best peer, direction applied:
   * ours ÷ best for higher-is-better, best ÷ ours for lower-is-better. > 1 means ours wins.
   */
  ratioToBestPeer: number | null;
  /** ours ÷ best peer, raw (no direction applied). */
  oursOverBestPeer: number | null;
  /** ours ÷ physical floor (higher-is-better metrics), when a floor ran. */
  ratioToFloor?: number | null;
  /** ours ÷ undecorated baseline, raw, when a baseline ran (HTTP). */
  ratioToBaseline?: number | null;
  /** Throughput lost to the decorator: (1 − ours ÷ baseline) × 100 (HTTP requests/s). */
  overheadPct?: number | null;
  notes: string[];
}

export interface ContenderInfo {
  id: string;
  label: string;
  kind: ContenderKind;
  settings?: string;
}

/** What a scenario hands over for one entry: the entry's own fields, and the raw outcomes. */
export interface EntryInput extends Pick<ResultEntry, 'id' | 'scenario' | 'group' | 'name' | 'metric' | 'unit' | 'betterIs' | 'params'> {
  contenders: readonly ContenderInfo[];
  outcomes: ReadonlyMap<string, Outcome>;
  notes?: string[];
  /** Values within ± this are noise (≈ 0): no ratio is computed from them. */
  noiseFloor?: number;
}

/** Medians, best peer and ratios of one metric. */
export function buildEntry(input: EntryInput): ResultEntry {
  const values = input.contenders.map((c): ContenderValue => {
    const outcome = input.outcomes.get(c.id);
    const samples = outcome?.samples[input.metric] ?? [];
    const failed = !outcome || outcome.failure !== undefined || samples.length === 0;
    return {
      id: c.id,
      label: c.label,
      kind: c.kind,
      settings: c.settings,
      status: failed ? 'failed' : 'ok',
      value: failed ? null : median(samples),
      samples,
      reason: failed ? (outcome?.failure ?? 'not measured') : undefined,
    };
  });
  const ours = values.find((v) => v.kind === 'ours');
  if (!ours) throw new Error(`${input.id}: no "ours" contender`);
  const peers = values.filter((v) => v !== ours);
  const better = (a: number, b: number): boolean => (input.betterIs === 'higher' ? a > b : a < b);
  let best: ContenderValue | undefined;
  for (const p of peers) if (p.kind === 'peer' && p.value !== null && (!best || better(p.value, best.value!))) best = p;
  const floor = peers.find((p) => p.kind === 'floor' && p.value !== null);
  const baseline = peers.find((p) => p.kind === 'baseline' && p.value !== null);
  const entry: ResultEntry = {
    id: input.id,
    scenario: input.scenario,
    group: input.group,
    name: input.name,
    metric: input.metric,
    unit: input.unit,
    betterIs: input.betterIs,
    params: input.params,
    ours,
    peers,
    bestPeer: best?.id ?? null,
    ratioToBestPeer:
      best && !withinNoise(input.noiseFloor, ours.value, best.value) ? directedRatio(ours.value, best.value, input.betterIs) : null,
    oursOverBestPeer: best ? rawRatio(ours.value, best.value) : null,
    notes: [...(input.notes ?? [])],
  };
  if (peers.some((p) => p.kind === 'floor')) entry.ratioToFloor = floor ? rawRatio(ours.value, floor.value) : null;
  if (peers.some((p) => p.kind === 'baseline')) {
    entry.ratioToBaseline = baseline ? rawRatio(ours.value, baseline.value) : null;
    if (input.unit === 'req/s') entry.overheadPct = entry.ratioToBaseline === null ? null : (1 - entry.ratioToBaseline) * 100;
  }
  return entry;
}

function withinNoise(noise: number | undefined, ...values: Array<number | null>): boolean {
  return noise !== undefined && values.some((v) => v !== null && Math.abs(v) < noise);
}

function rawRatio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return a / b;
}

function directedRatio(ours: number | null, best: number | null, betterIs: BetterIs): number | null {
  if (ours === null || best === null) return null;
  // A value at or below zero (retained bytes within noise, a zero latency) has no meaningful ratio.
  if (ours <= 0 || best <= 0) return null;
  return betterIs === 'higher' ? ours / best : best / ours;
}

/** The whole `bench/results/latest.json`. */
export interface BenchResults {
  generatedAt: string;
  mode: 'full' | 'quick';
  command: string;
  durationSec: number;
  machine: MachineInfo;
  settings: Record<string, string>;
  contenders: Array<ContenderInfo & { backend: string }>;
  entries: ResultEntry[];
  targets: TargetResult[];
  skipped: string[];
  /**
   * Present when the file was assembled by `--only … --merge`: which run each scenario's
   * entries come from (ratios inside a scenario are from one run; across parts they are not).
   */
  parts?: Array<{ scenarios: number[]; generatedAt: string; command: string; durationSec: number; load: string }>;
}

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  redis: string;
  postgres: string;
  packages: Record<string, string>;
  load: string;
}

export interface TargetResult {
  id: string;
  description: string;
  status: 'met' | 'missed' | 'not measured';
  measured: string;
  /** How far from the target (e.g. "needs 1.27× more"). */
  gap?: string;
}
