import type { Redis } from 'ioredis';

/**
 * Every command Redis has executed since it started, summed over `INFO commandstats`
 * — commands that scripts run through `redis.call` count too, so a Lua-heavy lock
 * cannot hide its work behind one EVALSHA. The difference of two readings around a
 * measurement is that measurement's command count, provided nobody else uses the
 * server meanwhile (the report says so).
 */
export async function redisCommandsExecuted(client: Redis): Promise<number> {
  const info = await client.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) total += Number(match[1]);
  return total;
}

/**
 * Counts the statements this process sends to PostgreSQL through `pg` (every
 * contender here uses it, advisory-lock included): `Client#query` is wrapped once
 * per process. The count is exact per contender because each contender runs in a
 * process of its own.
 */
export function countPostgresStatements(): { read(): number } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pg = require('pg') as { Client: { prototype: { query: (...args: unknown[]) => unknown } } };
  const proto = pg.Client.prototype as { query: (...args: unknown[]) => unknown; __nsbenchCounted?: { n: number } };
  if (!proto.__nsbenchCounted) {
    const counter = { n: 0 };
    const original = proto.query;
    proto.query = function (this: unknown, ...args: unknown[]) {
      counter.n++;
      return original.apply(this, args);
    };
    proto.__nsbenchCounted = counter;
  }
  const counter = proto.__nsbenchCounted;
  return { read: () => counter.n };
}
