import { SentinelGroup } from '../setup/redis-sentinel';
import { failoverRun, type FailoverKind, type FailoverRunResult } from '../redis/support/failover-run';

/**
 * The randomized fault run with Sentinel fail-overs (docs/providers/redis.md, *Fail-over*): a master, two replicas
 * and three Sentinels of its own; 4 processes × 8 loops × 3 keys of claim-first fenced
 * sections through the app's ioredis Sentinel client; fail-overs by `SENTINEL
 * FAILOVER` (the old master keeps running), kill -9 and SIGSTOP of the master, picked
 * and spaced by the seed. Run with and without `replicas` (test/redis/support/failover-run.ts
 * counts; test/redis/workers/failover-loop.worker.ts keeps the ledger).
 */
export interface SentinelFaultRunSize {
  readonly failovers: number;
  readonly processes: number;
  readonly loops: number;
  readonly keys: number;
  readonly seed: number;
}

export const SENTINEL_FAULT_RUN_SHORT: SentinelFaultRunSize = { failovers: 2, processes: 2, loops: 4, keys: 3, seed: 1 };
export const SENTINEL_FAULT_RUN_FULL: SentinelFaultRunSize = { failovers: 5, processes: 4, loops: 8, keys: 3, seed: 1 };

export interface SentinelFaultRunResult extends FailoverRunResult {
  readonly acks: number;
  readonly seed: number;
  readonly durationMs: number;
}

/** Seeded (xorshift32), so a run can be repeated from its seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x1_0000_0000;
  };
}

const KINDS: readonly FailoverKind[] = ['sentinel', 'kill', 'sigstop'];

/** One run on a group of its own (ports 6393-6395, 26393-26395), `acks` replica acknowledgements (0: off). */
export async function sentinelFaultRun(
  acks: number,
  size: SentinelFaultRunSize,
  log: (line: string) => void = () => undefined,
): Promise<SentinelFaultRunResult> {
  const random = rng(size.seed * 7919);
  // Every kind once in the first three (seeded order), then seeded picks.
  const order = [...KINDS].sort(() => random() - 0.5);
  const kinds = Array.from({ length: size.failovers }, (_, i) =>
    i < order.length ? order[i] : KINDS[Math.floor(random() * KINDS.length)],
  );
  const gaps = kinds.map(() => 3000 + Math.floor(random() * 5000));
  const started = Date.now();
  const group = await SentinelGroup.start({ basePort: 6393, sentinelBasePort: 26393, replicas: 2 });
  try {
    log(`sentinel fault run: acks ${acks}, seed ${size.seed}, fail-overs ${kinds.join(', ')}`);
    const run = await failoverRun(
      group,
      { processes: size.processes, loops: size.loops, keys: size.keys, acks, kinds, gapMs: gaps, tailMs: 5000 },
      log,
    );
    return { ...run, acks, seed: size.seed, durationMs: Date.now() - started };
  } finally {
    await group.stop();
  }
}

/** What a run got wrong: tokens handed out twice, fencing-order inversions, overlaps, lost updates. */
export function sentinelFaultRunProblems(run: SentinelFaultRunResult): string[] {
  return (
    [
      ['fencing tokens handed out twice', run.tokensTwice],
      ['fencing-order inversions (claims refused)', run.claimsRefused],
      ['overlaps', run.overlaps],
      ['lost updates', run.lostUpdates],
    ] as const
  )
    .filter(([, count]) => count > 0)
    .map(([what, count]) => `${count} ${what}`);
}

/** The report's rows (docs/reliability-report.md, *Sentinel fail-over runs*). */
export function renderSentinelFaultRuns(runs: readonly SentinelFaultRunResult[], header: string): string[] {
  const n = (value: number) => value.toLocaleString('en-US');
  const seconds = (ms: number | undefined) => (ms === undefined ? 'not within 60 s' : `${(ms / 1000).toFixed(1)} s`);
  return [
    header,
    '',
    '| `replicas` | seed | duration | fail-overs (old master demoted after; sections through the new master again after) | sections | fencing tokens handed out twice | fencing-order inversions | overlaps | lost updates | fenced writes refused | 503s | 429s | holders told they lost the lock |',
    '| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...runs.map((r) => {
      const failovers = r.failovers
        .map((f) => `${f.kind} ${f.from}→${f.to} (${seconds(f.demotedAfterMs)}; ${seconds(f.servedAgainAfterMs)})`)
        .join(', ');
      return `| ${r.acks ? `{ acks: ${r.acks}, timeoutMs: 300 }` : 'none'} | ${r.seed} | ${Math.round(r.durationMs / 1000)} s | ${failovers} | ${n(r.sections)} | ${r.tokensTwice} | ${r.claimsRefused} | ${r.overlaps} | ${r.lostUpdates} | ${n(r.writesRefused)} | ${n(r.backendErrors)} | ${n(r.timeouts)} | ${r.lost} |`;
    }),
  ];
}
