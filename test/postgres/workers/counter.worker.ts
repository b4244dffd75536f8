/**
 * One OS process of the multi-process suite: ITERATIONS critical sections on one
 * key, each a read-modify-write of a shared row, with a storage-side fencing check.
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME, KEY, ITERATIONS, TABLE.
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
  const provider = new PostgresLockProvider({
    connectionString: env('DATABASE_URL'),
    keyPrefix: env('KEY_PREFIX'),
    applicationName: env('APP_NAME'),
    lockPoolSize: 2,
    waitTimeoutMs: 120_000,
  });
  const locks = new LockService(provider);
  const work = new Client({ connectionString: env('DATABASE_URL') });
  await work.connect();
  const iterations = Number(env('ITERATIONS'));
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  const tokens: string[] = [];
  let overlaps = 0;
  let fencingViolations = 0;
  for (let i = 0; i < iterations; i++) {
    await locks.run(env('KEY'), async (lock) => {
      // Enter and read in one statement; `inside` > 1 would mean two holders at once.
      const { rows } = await work.query(`UPDATE ${table} SET inside = inside + 1 WHERE id = 1 RETURNING inside, counter, last_token`);
      const { inside, counter, last_token: lastToken } = rows[0];
      if (inside !== 1) overlaps++;
      if (BigInt(lastToken) >= lock.fencingToken) fencingViolations++;
      tokens.push(lock.fencingToken.toString());
      await new Promise((resolve) => setImmediate(resolve)); // widen the race window
      // Write what was read + 1 (not counter + 1): a lost update would show. Log it, and leave.
      await work.query(
        `WITH log AS (INSERT INTO ${table}_log (token, counter) VALUES ($2, $1))
         UPDATE ${table} SET counter = $1, last_token = $2, inside = inside - 1 WHERE id = 1`,
        [counter + 1, lock.fencingToken.toString()],
      );
    });
  }
  process.send!({ type: 'done', tokens, overlaps, fencingViolations });
  await provider.close();
  await work.end();
  process.disconnect();
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
