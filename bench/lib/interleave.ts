/** What one measurement of one contender produced. */
export interface Sample {
  metrics: Record<string, number>;
  /** Set when the contender gave up or erred: it is reported as failed, with this reason. */
  failure?: string;
}

export interface Outcome {
  id: string;
  /** Per metric, one value per round that succeeded. */
  samples: Record<string, number[]>;
  failure?: string;
  /** Metrics measured in the round that failed (shown next to the failure, never as a result). */
  failedMetrics?: Record<string, number>;
}

export type Log = (line: string) => void;

/**
 * Runs every contender once per round, the order rotated each round so no one
 * always goes first (warm CPU caches, JIT, a colder Redis) or last. A contender
 * that fails (throws, or returns a failure) is not measured again in this
 * scenario and keeps its failure.
 */
export async function interleave(
  ids: readonly string[],
  rounds: number,
  measure: (id: string, round: number) => Promise<Sample>,
  log: Log,
): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>(ids.map((id) => [id, { id, samples: {} }]));
  for (let round = 0; round < rounds; round++) {
    const order = ids.map((_, i) => ids[(i + round) % ids.length]);
    for (const id of order) {
      const outcome = outcomes.get(id)!;
      if (outcome.failure) continue;
      let sample: Sample;
      try {
        sample = await measure(id, round);
      } catch (error) {
        sample = { metrics: {}, failure: describeError(error) };
      }
      if (sample.failure) {
        outcome.failure = sample.failure;
        outcome.failedMetrics = sample.metrics;
        log(`    round ${round + 1}: ${id} failed: ${sample.failure}`);
        continue;
      }
      for (const [metric, value] of Object.entries(sample.metrics)) (outcome.samples[metric] ??= []).push(value);
      log(`    round ${round + 1}: ${id} ${formatMetrics(sample.metrics)}`);
    }
  }
  return outcomes;
}

export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const name = error.name && error.name !== 'Error' ? `${error.name}: ` : '';
    return `${name}${error.message}`.split('\n')[0].slice(0, 300);
  }
  return String(error).slice(0, 300);
}

function formatMetrics(metrics: Record<string, number>): string {
  return Object.entries(metrics)
    .map(([k, v]) => `${k}=${Math.abs(v) >= 100 ? Math.round(v) : Number(v.toPrecision(3))}`)
    .join(' ');
}
