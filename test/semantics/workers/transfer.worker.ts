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
 *
 * For the bad-day suite (key-sets-bad-day.e2e-spec.ts), optional: LEASE_MS and
 * HEARTBEAT_MS (Redis), LOCK_POOL_SIZE and LOCK_DATABASE_URL (PostgreSQL: the lock
 * sessions' path, the balances staying on DATABASE_URL) for the provider, LINGER
 * (after `done`, keep the provider open until the next message), FAILURE_DETAIL
 * (each failure with its transfer and message, not its name only), FIRST (a comma
 * list of `from>to`: lane i's first transfer is the i-th, the rest as MODE says), and ROLE:
 * - `victim`: on `go`, holds ACCOUNTS[0..1] in one section that marks both rows
 *   (`inside` + 1000), replies {type:'holding', inside} and never ends; and asks for
 *   ACCOUNTS[2..3] as a set too, replying {type:'partial'} once it holds the first
 *   of them and waits for the second (seen through its own `inspect`), and
 *   {type:'entered-partial'} should that section ever run. It is there to be killed.
 * - `stall`: the first transfer's section reads both rows, replies {type:'stalling'},
 *   blocks the event loop for STALL_MS, then does what a correct section does: it
 *   writes only if `locks.lost` and `locks.signal` say the set is still held. It
 *   reports {type:'stalled', lost, aborted, wrote, othersWrote} (othersWrote: a row
 *   changed since its read, by another section) before the other transfers.
 * A row's `inside` counts sections in units and a victim's mark in thousands; the
 * test adds another 1000 just before it kills the victim, so a section that enters
 * at 1001–1999 entered beside a live victim: an overlap.
 */
import { performance } from 'node:perf_hooks';
import type { LockProvider, LockSet } from 'nestjs-serialized';
import { LockService } from 'nestjs-serialized/lock.service';
import { Pool } from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

/** An optional numeric setting: `{ [option]: value }` when the variable is set, else nothing. */
const optional = (name: string, option: string): Record<string, number> =>
  process.env[name] ? { [option]: Number(process.env[name]) } : {};

async function providerOf(driver: string): Promise<LockProvider> {
  const waitTimeoutMs = Number(env('WAIT_MS'));
  const leaseMs = optional('LEASE_MS', 'leaseMs');
  const lockPoolSize = Number(process.env.LOCK_POOL_SIZE ?? 4);
  if (driver === 'redis') {
    const { RedisLockProvider } = await import('nestjs-serialized/providers/redis/redis-lock.provider');
    const heartbeatMs = optional('HEARTBEAT_MS', 'heartbeatMs');
    return new RedisLockProvider({ url: env('REDIS_URL'), keyPrefix: env('KEY_PREFIX'), waitTimeoutMs, ...leaseMs, ...heartbeatMs });
  }
  if (driver === 'mysql') {
    const { MysqlLockProvider } = await import('nestjs-serialized/providers/mysql/mysql-lock.provider');
    return new MysqlLockProvider({ url: env('MYSQL_URL'), keyPrefix: env('KEY_PREFIX'), lockPoolSize, waitTimeoutMs, ...leaseMs });
  }
  const { PostgresLockProvider } = await import('nestjs-serialized/providers/postgres/postgres-lock.provider');
  return new PostgresLockProvider({
    connectionString: process.env.LOCK_DATABASE_URL ?? env('DATABASE_URL'),
    keyPrefix: env('KEY_PREFIX'),
    lockPoolSize,
    waitTimeoutMs,
    ...leaseMs,
  });
}

/** A busy-wait: the event loop does not run (no timer, no reply, no renewal). */
function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // stalled
  }
}

/** A section entering a row at this `inside` is not alone there (see the header). */
const crowded = (inside: number): boolean => inside % 1000 !== 1 || Math.floor(inside / 1000) % 2 === 1;

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
  const role = process.env.ROLE;
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  if (role === 'victim') return victim(locks, work, table, accounts, waitTimeoutMs);

  let overlaps = 0;
  let transfers = 0;
  let maxCallMs = 0;
  const failures: string[] = [];
  const section = async (from: string, to: string, amount: number) => {
    const { rows } = await work.query(`UPDATE ${table} SET inside = inside + 1 WHERE id = ANY($1) RETURNING id, inside, balance`, [
      [from, to],
    ]);
    overlaps += rows.filter((row) => crowded(row.inside)).length;
    const balance = Object.fromEntries(rows.map((row) => [row.id, row.balance as number]));
    await new Promise((resolve) => setTimeout(resolve, 2)); // widen the race window
    // Writes what was read ± amount: a lost update would show in the total.
    await work.query(
      `UPDATE ${table} SET balance = CASE id WHEN $1 THEN $3::int ELSE $4::int END, inside = inside - 1 WHERE id IN ($1, $2)`,
      [from, to, balance[from] - amount, balance[to] + amount],
    );
    transfers++;
  };
  // ROLE=stall: the first transfer's section stalls (see the header).
  let stallNext = role === 'stall';
  const stalled = async (from: string, to: string, amount: number, held: LockSet) => {
    const read = async () =>
      Object.fromEntries(
        (await work.query(`SELECT id, balance, xmin::text AS version FROM ${table} WHERE id IN ($1, $2)`, [from, to])).rows.map((row) => [
          row.id as string,
          row as { balance: number; version: string },
        ]),
      );
    const before = await read();
    // Sent before the stall begins (the IPC write completes on the event loop).
    await new Promise((sent) => process.send!({ type: 'stalling' }, undefined, {}, sent));
    block(Number(env('STALL_MS')));
    // The first look after the stall: a loss shows at once (docs/semantics.md, *Several keys at once*).
    const lost = held.lost;
    const aborted = held.signal.aborted;
    const now = await read();
    const othersWrote = [from, to].some((id) => now[id].version !== before[id].version);
    // What a correct section does before it writes: is the set still held?
    const wrote = held.lost === undefined && !held.signal.aborted;
    if (wrote) {
      await work.query(`UPDATE ${table} SET balance = CASE id WHEN $1 THEN $3::int ELSE $4::int END WHERE id IN ($1, $2)`, [
        from,
        to,
        before[from].balance - amount,
        before[to].balance + amount,
      ]);
      transfers++;
    }
    process.send!({ type: 'stalled', lost: lost?.name, aborted, wrote, othersWrote });
  };
  const transfer = async (from: string, to: string, amount: number) => {
    const started = performance.now();
    try {
      if (stallNext) {
        stallNext = false;
        await locks.run([from, to], (held) => stalled(from, to, amount, held), { waitTimeoutMs });
      } else if (nested) {
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
      const name = String((error as Error)?.name ?? error);
      failures.push(process.env.FAILURE_DETAIL ? `${name} (${from} → ${to}): ${(error as Error)?.message}` : name);
    }
    maxCallMs = Math.max(maxCallMs, performance.now() - started);
  };
  let next = 0;
  const firsts = (process.env.FIRST ?? '')
    .split(',')
    .filter(Boolean)
    .map((first) => first.split('>'));
  const lane = async (_: unknown, index: number) => {
    let first: string[] | undefined = firsts[index];
    while (next < iterations) {
      next++;
      let from = accounts[0];
      let to = accounts[1];
      if (first) {
        [from, to] = first;
        first = undefined;
      } else if (!pair) {
        from = accounts[Math.floor(Math.random() * accounts.length)];
        do to = accounts[Math.floor(Math.random() * accounts.length)];
        while (to === from);
      }
      await transfer(from, to, 1 + Math.floor(Math.random() * 9));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  process.send!({ type: 'done', transfers, overlaps, failures, maxCallMs: Math.round(maxCallMs) });
  // LINGER: the provider stays open until the test says bye, so the test sees what a live instance still holds.
  if (process.env.LINGER) await new Promise<void>((resolve) => process.once('message', () => resolve()));
  await provider.close();
  await work.end();
  process.disconnect();
}

/** ROLE=victim (see the header): holds a set in a section that never ends, and part of another set. */
async function victim(locks: LockService, work: Pool, table: string, accounts: string[], waitTimeoutMs: number): Promise<void> {
  const [a, b, c, d] = accounts;
  void locks
    .run(
      [a, b],
      async () => {
        const { rows } = await work.query(`UPDATE ${table} SET inside = inside + 1000 WHERE id IN ($1, $2) RETURNING inside`, [a, b]);
        process.send!({ type: 'holding', inside: rows.map((row) => row.inside as number) });
        await new Promise(() => undefined); // mid-section until killed
      },
      { waitTimeoutMs },
    )
    .catch((error: unknown) => process.send!({ type: 'failed', message: String(error) }));
  void locks
    .run([c, d], () => process.send!({ type: 'entered-partial' }), { waitTimeoutMs })
    .catch((error: unknown) => process.send!({ type: 'failed', message: String(error) }));
  // Part of the second set: its first key held here, the second waited for.
  for (;;) {
    const [first, second] = await Promise.all([locks.inspect(c), locks.inspect(d)]);
    if (first.holders.some((holder) => holder.here) && second.waitingHere > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  process.send!({ type: 'partial' });
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
