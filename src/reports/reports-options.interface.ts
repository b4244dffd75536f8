import type { ConnectionOptions } from 'bullmq';

/** Options of `ReportsModule.register()`; each falls back to the environment, then to a default. */
export interface ReportsModuleOptions {
  /** Redis of the reports queue (default `{ url: REDIS_URL }`, else `redis://127.0.0.1:6379`). */
  connection?: ConnectionOptions;
  /** Prefix of the queue's Redis keys (default `REPORTS_QUEUE_PREFIX`, else `bull`). Use a `{hash tag}` on Redis Cluster. */
  prefix?: string;
  /** How long building one report takes, in ms (default `REPORT_DURATION_MS`, else 3000). */
  durationMs?: number;
  /** Reports built at once in this process, across users (default `REPORTS_CONCURRENCY`, else 4). */
  concurrency?: number;
}

export interface ResolvedReportsOptions {
  connection: ConnectionOptions;
  prefix: string;
  durationMs: number;
  concurrency: number;
}

/** Applies the environment and the defaults; a bad value stops start-up with every problem listed. */
export function resolveReportsOptions(options: ReportsModuleOptions, env: NodeJS.ProcessEnv = process.env): ResolvedReportsOptions {
  const problems: string[] = [];
  const integer = (value: number | undefined, variable: string, fallback: number, min: number): number => {
    if (value !== undefined) {
      if (Number.isInteger(value) && value >= min) return value;
      problems.push(
        `${variable === 'REPORT_DURATION_MS' ? 'durationMs' : 'concurrency'} must be an integer >= ${min}, got ${JSON.stringify(value)}`,
      );
      return fallback;
    }
    const raw = env[variable];
    if (raw === undefined || raw === '') return fallback;
    if (/^\d+$/.test(raw) && Number(raw) >= min) return Number(raw);
    problems.push(`${variable} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
    return fallback;
  };
  const resolved: ResolvedReportsOptions = {
    connection: options.connection ?? { url: env.REDIS_URL || 'redis://127.0.0.1:6379' },
    prefix: options.prefix ?? (env.REPORTS_QUEUE_PREFIX || 'bull'),
    durationMs: integer(options.durationMs, 'REPORT_DURATION_MS', 3000, 0),
    concurrency: integer(options.concurrency, 'REPORTS_CONCURRENCY', 4, 1),
  };
  if (problems.length) throw new Error(`Invalid reports configuration: ${problems.join('; ')}`);
  return resolved;
}
