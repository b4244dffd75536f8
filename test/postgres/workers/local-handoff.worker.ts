/**
 * One OS process of the cohorting suite: WAITERS callers of this process loop on one
 * key (PER_WAITER sections each), local hand-offs in HANDOFF mode (default 'cohort'). Each section is a
 * read-modify-write of a shared row with a storage-side fencing check, and logs
 * (token, counter, process, time) so the suite can see the global order.
 * With HANG_AFTER set, the section of that number never ends (the process is killed there).
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME, KEY, WAITERS, PER_WAITER, TABLE, NAME, HANG_AFTER?, HANDOFF?.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { LockService } from 'nestjs-serialized/lock.service';
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';
import { Client } from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

async function main(): Promise<void> {
  const table = env('TABLE');
  const name = env('NAME');
  const hangAfter = Number(process.env.HANG_AFTER ?? Infinity);
  const provider = new PostgresLockProvider({
    connectionString: env('DATABASE_URL'),
    keyPrefix: env('KEY_PREFIX'),
    applicationName: env('APP_NAME'),
    lockPoolSize: 2,
    waitTimeoutMs: 120_000,
    handoff: process.env.HANDOFF === 'strict' ? 'strict' : 'cohort',
  });
  const locks = new LockService(provider);
  const work = new Client({ connectionString: env('DATABASE_URL') });
  await work.connect();
  const waiters = Number(env('WAITERS'));
  const perWaiter = Number(env('PER_WAITER'));
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  let overlaps = 0;
  let fencingViolations = 0;
  let sections = 0;
  let previous = 0n;
  let longestWaitMs = 0;
  const loop = async (): Promise<void> => {
    for (let i = 0; i < perWaiter; i++) {
      const askedAt = performance.now();
      await locks.run(env('KEY'), async (lock) => {
        longestWaitMs = Math.max(longestWaitMs, performance.now() - askedAt);
        const { rows } = await work.query(`UPDATE ${table} SET inside = inside + 1 WHERE id = 1 RETURNING inside, counter, last_token`);
        const { inside, counter, last_token: lastToken } = rows[0];
        if (inside !== 1) overlaps++;
        if (BigInt(lastToken) >= lock.fencingToken) fencingViolations++;
        const token = lock.fencingToken;
        if (++sections === hangAfter) {
          // Local if this process's previous holder had the token just below.
          process.send!({ type: 'hanging', token: token.toString(), local: token === previous + 1n });
          await new Promise(() => undefined);
        }
        previous = token;
        await work.query(
          `WITH log AS (INSERT INTO ${table}_log (token, counter, proc, at) VALUES ($2, $1, $3, clock_timestamp()))
           UPDATE ${table} SET counter = $1, last_token = $2, inside = inside - 1 WHERE id = 1`,
          [counter + 1, token.toString(), name],
        );
      });
    }
  };
  await Promise.all(Array.from({ length: waiters }, loop));
  process.send!({ type: 'done', sections, overlaps, fencingViolations, longestWaitMs });
  await provider.close();
  await work.end();
  process.disconnect();
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
