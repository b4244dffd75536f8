/**
 * `node -r ts-node/register/transpile-only -r tsconfig-paths/register scripts/idempotency-latency.ts [requests]`
 *
 * What a replay costs, per driver: p50 latency of one HTTP request (Express, keep-alive,
 * sequential) to the example app's payment route, three ways —
 * - naive: the same handler without @Idempotent;
 * - first: @Idempotent with a new key each time (look-up, lock, look-up, handler, store, release);
 * - replay: @Idempotent with a key already stored (one look-up, then the stored bytes).
 * The handler's own "slow step" is 0 ms here, so the numbers are the library's cost.
 * Redis and PostgreSQL are the local servers (REDIS_URL / DATABASE_URL).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createApp } from '../src/app.factory';

const REQUESTS = Number(process.argv[2] ?? 400);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

type Driver = 'memory' | 'redis' | 'postgres';

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

async function measure(driver: Driver): Promise<{ naive: number; first: number; replay: number }> {
  const keyPrefix = `idemlat-${randomUUID().slice(0, 8)}`;
  const serialized =
    driver === 'memory'
      ? { driver, keyPrefix }
      : driver === 'redis'
        ? { driver, keyPrefix, redis: { url: REDIS_URL } }
        : { driver, keyPrefix, postgres: { connectionString: DATABASE_URL } };
  const app = await createApp({ config: { adapter: 'express', store: 'memory', paymentTaskMs: 0 }, serialized, logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  const account = `acc-${randomUUID().slice(0, 8)}`;
  const post = async (path: string, key?: string): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: '{"amount":4200,"currency":"EUR"}',
    });
    await response.arrayBuffer();
    if (response.status !== 201) throw new Error(`${path}: ${response.status}`);
    return performance.now() - started;
  };
  try {
    const replayKey = randomUUID();
    await post(`/accounts/${account}/payments`, replayKey);
    // Warm-up: connections, JIT, the PostgreSQL table.
    for (let i = 0; i < 50; i++) {
      await post(`/naive/accounts/${account}/payments`);
      await post(`/accounts/${account}/payments`, randomUUID());
      await post(`/accounts/${account}/payments`, replayKey);
    }
    const naive: number[] = [];
    const first: number[] = [];
    const replay: number[] = [];
    // Interleaved, so a busy moment of the host weighs on all three alike.
    for (let i = 0; i < REQUESTS; i++) {
      naive.push(await post(`/naive/accounts/${account}/payments`));
      first.push(await post(`/accounts/${account}/payments`, randomUUID()));
      replay.push(await post(`/accounts/${account}/payments`, replayKey));
    }
    return { naive: median(naive), first: median(first), replay: median(replay) };
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const rows: string[] = [];
  for (const driver of ['memory', 'redis', 'postgres'] as Driver[]) {
    const { naive, first, replay } = await measure(driver);
    rows.push(`| ${driver} | ${naive.toFixed(2)} | ${first.toFixed(2)} | ${replay.toFixed(2)} | ${(first / replay).toFixed(2)}× |`);
  }
  console.log(`p50 latency in ms of one request, ${REQUESTS} requests each, sequential, keep-alive (Node ${process.version})\n`);
  console.log('| driver | naive handler (no @Idempotent) | first request (handler runs) | replay | first / replay |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
