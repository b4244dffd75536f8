/**
 * One OS process of the key-set shapes suite (test/postgres/postgres-key-set-shapes.e2e-spec.ts):
 * CALLERS callers at once, each ITERATIONS sections of `lockService.run(KEYS, …)` held
 * as SHAPE (`group`: `concurrency: LIMIT`; `reader`: `shared: true`; `writer`: alone),
 * each section recorded in TABLE, one row per key — who is inside at once, across
 * every process (`inside`, and the most seen, `peak`), and whether a writer ever had
 * company on any of its keys.
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME, KEYS (comma-separated), SHAPE, LIMIT, CALLERS, ITERATIONS, HOLD_MS, TABLE.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';
import { LockService } from 'nestjs-serialized/lock.service';
import { Pool } from 'pg';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const table = env('TABLE');
  const shape = env('SHAPE');
  const options =
    shape === 'group' ? { concurrency: Number(env('LIMIT')) } : shape === 'reader' ? { shared: true } : ({} as Record<string, never>);
  const provider = new PostgresLockProvider({
    connectionString: env('DATABASE_URL'),
    keyPrefix: env('KEY_PREFIX'),
    applicationName: env('APP_NAME'),
    lockPoolSize: 4,
    waitTimeoutMs: 120_000,
  });
  const locks = new LockService(provider);
  const work = new Pool({ connectionString: env('DATABASE_URL'), max: Number(env('CALLERS')) + 1 });
  const keys = env('KEYS').split(',');
  const callers = Number(env('CALLERS'));
  const iterations = Number(env('ITERATIONS'));
  const holdMs = Number(env('HOLD_MS', '20'));
  const writer = shape === 'writer' ? 1 : 0;

  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  let sections = 0;
  let writerWithCompany = 0;
  const tokens: string[] = [];
  const run = async (): Promise<void> => {
    for (let i = 0; i < iterations; i++) {
      await locks.run(
        keys,
        async (held) => {
          // Enter in one statement on every key of the set: how many are inside each now, and whether a writer is among them.
          const { rows } = await work.query(
            `UPDATE ${table} SET inside = inside + 1, writers = writers + $1, peak = greatest(peak, inside + 1) WHERE key = ANY($2) RETURNING inside, writers`,
            [writer, keys],
          );
          for (const { inside, writers } of rows as { inside: number; writers: number }[]) {
            if ((writer === 1 && inside !== 1) || (writer === 0 && writers > 0)) writerWithCompany++;
          }
          for (const lock of held) tokens.push(lock.fencingToken.toString());
          await sleep(holdMs);
          await work.query(`UPDATE ${table} SET inside = inside - 1, writers = writers - $1 WHERE key = ANY($2)`, [writer, keys]);
          sections++;
        },
        options,
      );
    }
  };
  const results = await Promise.allSettled(Array.from({ length: callers }, () => run()));
  const failed = results.filter((result) => result.status === 'rejected').map((result) => String((result as PromiseRejectedResult).reason));
  await provider.close();
  await work.end();
  process.send!({ type: 'done', sections, writerWithCompany, tokens, failed });
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
