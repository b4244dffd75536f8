/**
 * One OS process of the key-set suite: transfers between accounts whose balances
 * live in a PostgreSQL table, each holding both accounts through its own provider
 * (DRIVER: redis, postgres or mysql). The row's `inside` counts the sections in an
 * account at once: above 1 is an overlap.
 *
 * Env: DRIVER, DATABASE_URL, REDIS_URL, MYSQL_URL, KEY_PREFIX, TABLE, ACCOUNTS (comma list),
 * ITERATIONS, CONCURRENCY (sections in flight in this process), WAIT_MS, and MODE:
 * - `random`: from and to drawn at random among ACCOUNTS (both directions);
 * - `pair`: always ACCOUNTS[0] → ACCOUNTS[1] (another process runs the other way);
 * and HOW: `set` (`run([from, to])`) or `nested` (`run(from, () => run(to))`: the
 * naive way, which deadlocks against the opposite order).
 * Replies {type:'done', transfers, overlaps, failures: string[], maxCallMs}.
 */
import { performance } from 'node:perf_hooks';
import type { LockProvider } from 'nestjs-serialized';
import { LockService } from 'nestjs-serialized/lock.service';
import { Pool } from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

async function providerOf(driver: string): Promise<LockProvider> {
  const waitTimeoutMs = Number(env('WAIT_MS'));
  if (driver === 'redis') {
    const { RedisLockProvider } = await import('nestjs-serialized/providers/redis/redis-lock.provider');
    return new RedisLockProvider({ url: env('REDIS_URL'), keyPrefix: env('KEY_PREFIX'), waitTimeoutMs });
  }
  if (driver === 'mysql') {
    const { MysqlLockProvider } = await import('nestjs-serialized/providers/mysql/mysql-lock.provider');
    return new MysqlLockProvider({ url: env('MYSQL_URL'), keyPrefix: env('KEY_PREFIX'), lockPoolSize: 4, waitTimeoutMs });
  }
  const { PostgresLockProvider } = await import('nestjs-serialized/providers/postgres/postgres-lock.provider');
  return new PostgresLockProvider({ connectionString: env('DATABASE_URL'), keyPrefix: env('KEY_PREFIX'), lockPoolSize: 4, waitTimeoutMs });
}

async function main(): Promise<void> {
  const table = env('TABLE');
  const accounts = env('ACCOUNTS').split(',');
  const provider = await providerOf(env('DRIVER'));
  const locks = new LockService(provider);
  const work = new Pool({ connectionString: env('DATABASE_URL'), max: 4 });
  const iterations = Number(env('ITERATIONS'));
  const concurrency = Number(process.env.CONCURRENCY ?? 2);
  const waitTimeoutMs = Number(env('WAIT_MS'));
  const nested = env('HOW') === 'nested';
  const pair = env('MODE') === 'pair';
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  let overlaps = 0;
  let transfers = 0;
  let maxCallMs = 0;
  const failures: string[] = [];
  const section = async (from: string, to: string, amount: number) => {
    const { rows } = await work.query(`UPDATE ${table} SET inside = inside + 1 WHERE id = ANY($1) RETURNING id, inside, balance`, [
      [from, to],
    ]);
    overlaps += rows.filter((row) => row.inside !== 1).length;
    const balance = Object.fromEntries(rows.map((row) => [row.id, row.balance as number]));
    await new Promise((resolve) => setTimeout(resolve, 2)); // widen the race window
    // Writes what was read ± amount: a lost update would show in the total.
    await work.query(
      `UPDATE ${table} SET balance = CASE id WHEN $1 THEN $3::int ELSE $4::int END, inside = inside - 1 WHERE id IN ($1, $2)`,
      [from, to, balance[from] - amount, balance[to] + amount],
    );
    transfers++;
  };
  const transfer = async (from: string, to: string, amount: number) => {
    const started = performance.now();
    try {
      if (nested) {
        await locks.run(
          from,
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            await locks.run(to, () => section(from, to, amount), { waitTimeoutMs });
          },
          { waitTimeoutMs },
        );
      } else {
        await locks.run([from, to], () => section(from, to, amount), { waitTimeoutMs });
      }
    } catch (error) {
      failures.push(String((error as Error)?.name ?? error));
    }
    maxCallMs = Math.max(maxCallMs, performance.now() - started);
  };
  let next = 0;
  const lane = async () => {
    while (next < iterations) {
      next++;
      let from = accounts[0];
      let to = accounts[1];
      if (!pair) {
        from = accounts[Math.floor(Math.random() * accounts.length)];
        do to = accounts[Math.floor(Math.random() * accounts.length)];
        while (to === from);
      }
      await transfer(from, to, 1 + Math.floor(Math.random() * 9));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  process.send!({ type: 'done', transfers, overlaps, failures, maxCallMs: Math.round(maxCallMs) });
  await provider.close();
  await work.end();
  process.disconnect();
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
