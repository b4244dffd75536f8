import type { DigestRun } from './digest.log';

/** What {@link readDigestRuns} found across the instances. */
export interface DigestDemoResult {
  /** Ticks (whole seconds) every instance was up for. */
  ticks: number;
  /** `@OncePerTick` digests sent for those ticks, and how many ticks got other than one. */
  sent: number;
  wrongTicks: number;
  /** `@OncePerTick` digests sent per instance (pid → count) for those ticks. */
  perInstance: Record<string, number>;
  /** The naive twin's digests for the same ticks. */
  naiveSent: number;
}

/**
 * Reads `GET /digests` of every instance and counts, for the every-second ticks
 * between `from` and `to` (ms since the epoch), how many times each was sent.
 */
export async function readDigestRuns(urls: string[], from: number, to: number): Promise<DigestDemoResult> {
  const reports = await Promise.all(
    urls.map(async (url) => (await fetch(`${url}/digests`)).json() as Promise<{ instance: number; runs: DigestRun[] }>),
  );
  const first = Math.ceil(from / 1000) * 1000;
  const last = Math.floor(to / 1000) * 1000;
  const inWindow = (run: DigestRun) => run.at >= first && run.at < last;
  const perTick = new Map<number, number>();
  for (let tick = first; tick < last; tick += 1000) perTick.set(tick, 0);
  const perInstance: Record<string, number> = {};
  let naiveSent = 0;
  for (const { instance, runs } of reports) {
    perInstance[instance] ??= 0;
    for (const run of runs) {
      if (run.job === 'naive') {
        if (inWindow(run)) naiveSent++;
        continue;
      }
      if (!inWindow(run)) continue;
      perInstance[instance] = (perInstance[instance] ?? 0) + 1;
      const tick = Math.floor(run.at / 1000) * 1000;
      perTick.set(tick, perTick.get(tick)! + 1);
    }
  }
  return {
    ticks: perTick.size,
    sent: [...perTick.values()].reduce((a, b) => a + b, 0),
    wrongTicks: [...perTick.values()].filter((count) => count !== 1).length,
    perInstance,
    naiveSent,
  };
}
