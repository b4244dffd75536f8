import { faultRun, FAULT_RUN_FULL, FAULT_RUN_SHORT, type FaultRunResult, type FaultRunSize } from './fault-run.scenario';

/**
 * The shaped fault run: the randomized fault run (fault-run.scenario.ts) —
 * same processes, loops, faults one at a time and fault-free tail — with several
 * holders per key. Keys k0, k1 are group keys (every caller `concurrency: 3`); k2, k3
 * are reader/writer keys (each section, seeded, a reader `shared: true` or a writer
 * taking the key alone and doing the fenced read-modify-write). Judged by
 * shaped-fault-run.checker.ts: never more than 3 untold holders inside a group key and
 * 3 together at some point; no writer beside another untold holder and readers together
 * at some point; 0 lost updates; no token entered twice.
 */
export const SHAPE = { groupKeys: 2, limit: 3 } as const;

const shaped = (size: FaultRunSize): FaultRunSize => ({ ...size, keys: 4, shape: SHAPE });

export const SHAPED_FAULT_RUN_SHORT: FaultRunSize = shaped(FAULT_RUN_SHORT);
export const SHAPED_FAULT_RUN_FULL: FaultRunSize = shaped(FAULT_RUN_FULL);

/** A real driver's shaped run. */
export function shapedFaultRun(
  driver: 'redis' | 'postgres',
  size: FaultRunSize,
  log: (line: string) => void = () => undefined,
): Promise<FaultRunResult> {
  return faultRun(driver, size, log);
}

/**
 * The control: the Redis driver miswired under the same kind of faults (stalls past the
 * lease) — group callers pass `concurrency: 1000` (a limit that never binds), writers pass
 * `shared: true` (readers do not exclude them) and write unfenced. The checker must find
 * holders past the cap, writers beside others and lost updates, or the run did not
 * exercise what it checks.
 */
export function shapedControl(size: FaultRunSize, log: (line: string) => void = () => undefined): Promise<FaultRunResult> {
  return faultRun(
    'redis',
    {
      ...size,
      faultMs: Math.min(size.faultMs, 20_000),
      kinds: ['sigstop', 'block'],
      tail: false,
      shape: { ...SHAPE, control: true },
    },
    log,
  );
}
