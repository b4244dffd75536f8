/**
 * One OS process of the holders suite (test/postgres/postgres-holders.e2e-spec.ts):
 * CALLERS callers at once, each ITERATIONS sections on KEY held as SHAPE
 * (`group`: `concurrency: LIMIT`; `reader`: `shared: true`; `writer`: alone), each
 * section recorded in the shared row of TABLE — who is inside at once, across every
 * process (`inside`, and the most seen, `peak`), and whether a writer ever had
 * company. Each grant's token is logged to TABLE_log. ITERATIONS 0: loop until
 * told `stop`. MODE `hold`: take the key CALLERS times and keep it until killed.
 * SHAPE_COLUMN: TABLE has a column per shape in the run; this process counts itself in
 * that one, and counts a section that found a holder of another shape inside, or more
 * holders than its LIMIT, in `mixedCompany`.
 * Env: DATABASE_URL, KEY_PREFIX, APP_NAME, KEY, SHAPE, LIMIT, CALLERS, ITERATIONS, HOLD_MS, TABLE, SHAPE_COLUMN.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { PostgresLockProvider } from 'nestjs-serialized/providers/postgres/postgres-lock.provider';
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
    lockPoolSize: Number(env('POOL_SIZE', '4')),
    waitTimeoutMs: 120_000,
  });
  const work = new Pool({ connectionString: env('DATABASE_URL'), max: Number(env('CALLERS')) + 1 });
  const key = env('KEY');
  const callers = Number(env('CALLERS'));
  const iterations = Number(env('ITERATIONS', '0'));
  const holdMs = Number(env('HOLD_MS', '20'));
  let stopping = false;

  if (env('MODE', '') === 'hold') {
    const held = await Promise.all(Array.from({ length: callers }, () => provider.acquire(key, options)));
    process.send!({ type: 'held', tokens: held.map((lock) => lock.fencingToken.toString()) });
    setInterval(() => undefined, 60_000); // keeps the keys until killed
    return;
  }

  process.send!({ type: 'ready' });
  process.on('message', (message: { type: string }) => {
    if (message.type === 'stop') stopping = true;
  });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  const writer = shape === 'writer' ? 1 : 0;
  let sections = 0;
  let writerWithCompany = 0;
  let peakSeen = 0;
  let mixedCompany = 0;
  const column = env('SHAPE_COLUMN', '');
  const limit = shape === 'group' ? Number(env('LIMIT')) : Infinity;
  const tokens: string[][] = [];
  const run = async (caller: number): Promise<void> => {
    const mine: string[] = [];
    tokens[caller] = mine;
    for (let i = 0; iterations === 0 ? !stopping : i < iterations; i++) {
      const lock = await provider.acquire(key, options);
      try {
        // Enter in one statement: how many are inside now, and whether a writer is among them.
        const { rows } = await work.query(
          `UPDATE ${table} SET inside = inside + 1, writers = writers + $1, peak = greatest(peak, inside + 1) WHERE id = 1 RETURNING inside, writers`,
          [writer],
        );
        const { inside, writers } = rows[0] as { inside: number; writers: number };
        peakSeen = Math.max(peakSeen, inside);
        if ((writer === 1 && inside !== 1) || (writer === 0 && writers > 0)) writerWithCompany++;
        await work.query(`INSERT INTO ${table}_log (token, process, caller) VALUES ($1, $2, $3)`, [
          lock.fencingToken.toString(),
          process.pid,
          caller,
        ]);
        mine.push(lock.fencingToken.toString());
        if (column) {
          // Who else is inside, by shape: every other shape's column must read 0.
          const { rows: shapes } = await work.query(
            `UPDATE ${table} SET ${column} = ${column} + 1 WHERE id = 1 RETURNING readers + g2 + g3 - ${column} AS others, ${column} AS mine`,
          );
          const { others, mine: same } = shapes[0] as { others: number; mine: number };
          if (others > 0 || same > limit) mixedCompany++;
        }
        await sleep(holdMs);
        if (column) await work.query(`UPDATE ${table} SET ${column} = ${column} - 1 WHERE id = 1`);
        await work.query(`UPDATE ${table} SET inside = inside - 1, writers = writers - $1 WHERE id = 1`, [writer]);
        sections++;
      } finally {
        await lock.release();
      }
    }
  };
  const results = await Promise.allSettled(Array.from({ length: callers }, (_, caller) => run(caller)));
  const failed = results.filter((result) => result.status === 'rejected').map((result) => String((result as PromiseRejectedResult).reason));
  await provider.close();
  await work.end();
  process.send!({ type: 'done', sections, writerWithCompany, mixedCompany, peakSeen, tokens, failed });
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  process.send?.({ type: 'failed', message: String(error?.stack ?? error) });
  process.exit(1);
});
