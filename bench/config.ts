import type { Backend } from './subjects/subject';

/** The backends scenario 4 (many keys) runs (not MySQL yet). */
type ManyKeysBackend = Exclude<Backend, 'mysql'>;

/** Sizes and durations of one run; `--quick` shrinks them to stay under a minute. */
export interface BenchConfig {
  mode: 'full' | 'quick';
  uncontended: { rounds: number; warmupMs: number; durationMs: number };
  hotKey: { rounds: number; waiters: number; warmupMs: number; durationMs: number; drainTimeoutMs: number };
  hotKeyProcesses: {
    rounds: number;
    processes: number;
    waitersPerProcess: number;
    warmupMs: number;
    durationMs: number;
    drainTimeoutMs: number;
  };
  manyKeys: { rounds: Record<ManyKeysBackend, number>; keys: Record<ManyKeysBackend, number>; opsPerKey: number; timeoutMs: number };
  memory: { rounds: number; keys: number; heldKeys: number; batch: number };
  http: { rounds: number; connections: number; durationSec: number; warmupRequests: number };
  transfer: { rounds: number; callers: number; accounts: number; warmupMs: number; durationMs: number; drainTimeoutMs: number };
  holders: {
    rounds: number;
    callers: number;
    permits: number;
    writeEvery: number;
    sectionMs: number;
    warmupMs: number;
    durationMs: number;
    drainTimeoutMs: number;
  };
}

export const FULL: BenchConfig = {
  mode: 'full',
  // Windows long enough for a 2-statement PostgreSQL loop to settle (150 ms after 50 ms swung 0.5–0.9× its floor).
  uncontended: { rounds: 7, warmupMs: 200, durationMs: 400 },
  hotKey: { rounds: 5, waiters: 100, warmupMs: 100, durationMs: 400, drainTimeoutMs: 30_000 },
  hotKeyProcesses: { rounds: 4, processes: 4, waitersPerProcess: 25, warmupMs: 150, durationMs: 700, drainTimeoutMs: 30_000 },
  // Redis and PostgreSQL: one round — the polling peers need ~25 s per 80,000 operations.
  manyKeys: {
    rounds: { memory: 3, redis: 1, postgres: 1 },
    keys: { memory: 10_000, redis: 10_000, postgres: 10_000 },
    opsPerKey: 8,
    timeoutMs: 45_000,
  },
  memory: { rounds: 2, keys: 1_000_000, heldKeys: 50_000, batch: 1000 },
  // Five rounds: on a shared host one route's samples spread 1.6k–4.2k req/s over three.
  http: { rounds: 5, connections: 32, durationSec: 2, warmupRequests: 1000 },
  // 8 callers on 6 accounts: at most 3 transfers can run at once, so most callers wait on most turns.
  transfer: { rounds: 5, callers: 8, accounts: 6, warmupMs: 150, durationMs: 500, drainTimeoutMs: 15_000 },
  // 16 callers of one key, 4 at a time (scenario 8, docs/BENCHMARKS.md); 1 write in 10 for the shared rows.
  holders: { rounds: 3, callers: 16, permits: 4, writeEvery: 10, sectionMs: 1, warmupMs: 150, durationMs: 500, drainTimeoutMs: 15_000 },
};

export const QUICK: BenchConfig = {
  mode: 'quick',
  uncontended: { rounds: 2, warmupMs: 30, durationMs: 120 },
  hotKey: { rounds: 2, waiters: 100, warmupMs: 100, durationMs: 250, drainTimeoutMs: 15_000 },
  hotKeyProcesses: { rounds: 2, processes: 4, waitersPerProcess: 25, warmupMs: 100, durationMs: 300, drainTimeoutMs: 15_000 },
  manyKeys: {
    rounds: { memory: 2, redis: 2, postgres: 2 },
    keys: { memory: 1000, redis: 300, postgres: 200 },
    opsPerKey: 8,
    timeoutMs: 10_000,
  },
  memory: { rounds: 1, keys: 200_000, heldKeys: 10_000, batch: 1000 },
  http: { rounds: 1, connections: 32, durationSec: 1, warmupRequests: 100 },
  transfer: { rounds: 2, callers: 8, accounts: 6, warmupMs: 50, durationMs: 200, drainTimeoutMs: 10_000 },
  holders: { rounds: 2, callers: 16, permits: 4, writeEvery: 10, sectionMs: 1, warmupMs: 50, durationMs: 200, drainTimeoutMs: 10_000 },
};
