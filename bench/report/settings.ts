import type { BenchConfig } from '../config';

/** The sizes and durations of a run, as the report states them. */
export function runSettings(config: BenchConfig): Record<string, string> {
  const { uncontended: u, hotKey: h, hotKeyProcesses: p, manyKeys: m, memory: mem, http, transfer: t, holders: o } = config;
  return {
    '1. uncontended': `1 caller, sequential, new key each time; ${u.durationMs} ms per measurement after ${u.warmupMs} ms warm-up; ${u.rounds} rounds`,
    '2. hot key, 1 process': `${h.waiters} waiters; ${h.durationMs} ms window after ${h.warmupMs} ms warm-up; ${h.rounds} rounds`,
    '3. hot key, processes': `${p.processes} processes × ${p.waitersPerProcess} waiters; ${p.durationMs} ms window after ${p.warmupMs} ms warm-up; ${p.rounds} rounds`,
    '4. many keys': `keys: in-memory ${m.keys.memory}, Redis ${m.keys.redis}, PostgreSQL ${m.keys.postgres}; ${m.opsPerKey} operations per key at once; give up after ${m.timeoutMs / 1000} s; rounds: in-memory ${m.rounds.memory}, Redis ${m.rounds.redis}, PostgreSQL ${m.rounds.postgres}`,
    '5. memory': `${mem.keys} keys locked and released (${mem.batch} at a time), ${mem.heldKeys} held at once; ${mem.rounds} round(s), one --expose-gc child each`,
    '6. HTTP': `autocannon ${http.connections} connections, ${http.durationSec} s per run, ${http.warmupRequests}-request warm-up per route; ${http.rounds} rounds`,
    '7. two-key transfers': `${t.callers} callers in one process, random pairs of ${t.accounts} accounts; ${t.durationMs} ms window after ${t.warmupMs} ms warm-up; ${t.rounds} rounds`,
    '8. several holders of one key': `${o.callers} callers of one key in one process; N = ${o.permits}; shared: 1 write in ${o.writeEvery}; sections wait ${o.sectionMs} ms; ${o.durationMs} ms window after ${o.warmupMs} ms warm-up; ${o.rounds} rounds`,
  };
}
