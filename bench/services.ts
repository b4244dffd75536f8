import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import { connectRedis } from './subjects/redis.subjects';

/** Where the benchmarks find Redis and PostgreSQL (the same variables as the app and the tests). */
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const MYSQL_URL = process.env.BENCH_MYSQL_URL ?? process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** Every key the benchmarks create starts with this (and redis-semaphore's `mutex:` before it). */
export const KEY_MARKER = 'nsbench';

/** A namespace of this run: several runs (or engineers) never share keys. */
export function runPrefix(): string {
  return `${KEY_MARKER}:${process.pid.toString(36)}${Date.now().toString(36)}`;
}

export interface ServiceStatus {
  redis: { reachable: boolean; version?: string; error?: string };
  postgres: { reachable: boolean; version?: string; maxConnections?: number; error?: string };
  mysql: { reachable: boolean; version?: string; error?: string };
}

export async function probeServices(): Promise<ServiceStatus> {
  const status: ServiceStatus = { redis: { reachable: false }, postgres: { reachable: false }, mysql: { reachable: false } };
  const redis = connectRedis(REDIS_URL);
  redis.on('error', () => undefined);
  try {
    const info = await withTimeout(redis.info('server'), 3000, 'Redis did not answer');
    status.redis = { reachable: true, version: /redis_version:(\S+)/.exec(info)?.[1] };
  } catch (error) {
    status.redis.error = (error as Error).message;
  } finally {
    redis.disconnect();
  }
  const pg = new Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3000 });
  pg.on('error', () => undefined);
  try {
    await pg.connect();
    const { rows } = await pg.query<{ server_version: string }>('SHOW server_version');
    const max = await pg.query<{ max_connections: string }>('SHOW max_connections');
    status.postgres = { reachable: true, version: rows[0].server_version, maxConnections: Number(max.rows[0].max_connections) };
  } catch (error) {
    status.postgres.error = (error as Error).message;
  } finally {
    await pg.end().catch(() => undefined);
  }
  try {
    const mysql = await withTimeout(createConnection({ uri: MYSQL_URL, connectTimeout: 3000 }), 3000, 'MySQL did not answer');
    try {
      const [rows] = await mysql.query({ sql: 'SELECT VERSION()', rowsAsArray: true });
      status.mysql = { reachable: true, version: String((rows as unknown[][])[0][0]) };
    } finally {
      await mysql.end().catch(() => undefined);
    }
  } catch (error) {
    status.mysql.error = (error as Error).message;
  }
  return status;
}

/**
 * Server connections a scenario may open without starving everyone else who
 * shares this PostgreSQL: max_connections minus the reserved ones, those in use,
 * and a margin of 10.
 */
export async function freePostgresConnections(): Promise<{ free: number; max: number; used: number }> {
  const pg = new Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3000 });
  await pg.connect();
  try {
    const { rows } = await pg.query<{ max: string; reserved: string; used: string }>(
      `SELECT current_setting('max_connections') AS max, current_setting('superuser_reserved_connections') AS reserved,
              (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') AS used`,
    );
    const max = Number(rows[0].max);
    const used = Number(rows[0].used);
    return { free: max - Number(rows[0].reserved) - used - 10, max, used };
  } finally {
    await pg.end();
  }
}

/** Deletes the keys of this run's prefix (only ours: never FLUSHALL, others share this Redis). */
export async function cleanupRedis(prefix: string): Promise<number> {
  const redis = connectRedis(REDIS_URL);
  redis.on('error', () => undefined);
  let deleted = 0;
  try {
    // Keys may carry the prefix after a hash-tag brace or redis-semaphore's `mutex:`.
    const stream = redis.scanStream({ match: `*${prefix}*`, count: 1000 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length) deleted += await redis.unlink(...keys);
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
