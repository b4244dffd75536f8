// autocannon ships no types; this is the part of its programmatic API the benchmarks use.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (options: AutocannonOptions) => Promise<AutocannonResult>;

interface AutocannonRequest {
  method: string;
  path: string;
  setupRequest?: (request: { method: string; path: string }) => { method: string; path: string };
}

interface AutocannonOptions {
  url: string;
  connections: number;
  pipelining?: number;
  duration?: number;
  /** Stop after this many requests instead of after `duration`. */
  amount?: number;
  requests: AutocannonRequest[];
}

interface AutocannonResult {
  latency: { p50: number; p99: number };
  totalCompletedRequests?: number;
  requests: { total: number; average: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
}

export interface LoadResult {
  requestsPerSec: number;
  p50: number;
  p99: number;
  /** Requests completed. */
  requests: number;
  /** Non-2xx answers, errors and timeouts. */
  bad: number;
}

/**
 * POSTs to `path(i)` (i = 0, 1, 2, … across all connections) for `durationSec`
 * (autocannon ends runs on its 1-second tick), or for `amount` requests.
 */
export async function load(
  url: string,
  path: (i: number) => string,
  connections: number,
  durationSec: number,
  amount?: number,
): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url,
    connections,
    pipelining: 1,
    ...(amount ? { amount } : { duration: durationSec }),
    requests: [{ method: 'POST', path: path(0), setupRequest: (request) => ({ ...request, path: path(i++) }) }],
  });
  return {
    requestsPerSec: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    bad: result.non2xx + result.errors + result.timeouts,
  };
}
