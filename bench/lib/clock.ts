import { performance } from 'node:perf_hooks';

/**
 * Milliseconds on a clock every process on this machine shares: the process's
 * high-resolution origin (wall clock at start-up) plus its monotonic offset. Used
 * to pair one process's release with another process's critical-section start.
 */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Monotonic milliseconds inside one process. */
export function now(): number {
  return performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves at `at` on the shared clock (never early by more than the timer granularity). */
export async function sleepUntil(at: number): Promise<void> {
  const wait = at - sharedNow();
  if (wait > 0) await sleep(wait);
  while (sharedNow() < at) await new Promise<void>((resolve) => setImmediate(resolve));
}
