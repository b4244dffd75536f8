/**
 * One OS process of the MySQL multi-process suite: ITERATIONS critical sections on
 * one key, each a read-modify-write of a shared row, with a storage-side fencing check.
 * Env: MYSQL_URL, KEY_PREFIX, KEY, ITERATIONS, TABLE.
 */
// Deep imports: a worker that loads only what it uses starts in half the time (the suite waits for it).
import { LockService } from 'nestjs-serialized/lock.service';
import { MysqlLockProvider } from 'nestjs-serialized/providers/mysql/mysql-lock.provider';
import { createConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

async function main(): Promise<void> {
  const table = env('TABLE');
  const provider = new MysqlLockProvider({ url: env('MYSQL_URL'), keyPrefix: env('KEY_PREFIX'), lockPoolSize: 2, waitTimeoutMs: 120_000 });
  const locks = new LockService(provider);
  const work = await createConnection({ uri: env('MYSQL_URL'), supportBigNumbers: true, bigNumberStrings: true });
  const iterations = Number(env('ITERATIONS'));
  process.send!({ type: 'ready' });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));

  const tokens: string[] = [];
  let overlaps = 0;
  let fencingViolations = 0;
  for (let i = 0; i < iterations; i++) {
    await locks.run(env('KEY'), async (lock) => {
      // Enter, then read: `inside` > 1 would mean two holders at once.
      await work.query<ResultSetHeader>(`UPDATE ${table} SET inside = inside + 1 WHERE id = 1`);
      const [[row]] = await work.query<RowDataPacket[]>(`SELECT inside, counter, last_token FROM ${table} WHERE id = 1`);
      if (Number(row.inside) !== 1) overlaps++;
      if (BigInt(row.last_token) >= lock.fencingToken) fencingViolations++;
      tokens.push(lock.fencingToken.toString());
      await new Promise((resolve) => setImmediate(resolve)); // widen the race window
      // Write what was read + 1 (not counter + 1): a lost update would show. Log it, and leave.
      const next = Number(row.counter) + 1;
      await work.query(`INSERT INTO ${table}_log (token, counter) VALUES (?, ?)`, [lock.fencingToken.toString(), next]);
      await work.query(`UPDATE ${table} SET counter = ?, last_token = ?, inside = inside - 1 WHERE id = 1`, [
        next,
        lock.fencingToken.toString(),
      ]);
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
