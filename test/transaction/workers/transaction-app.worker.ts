/**
 * One app process of the transaction-mode suites (test/transaction, test/reliability):
 * the rewards app of support/transaction-app.ts, listening on a free port.
 * Env: ADAPTER (typeorm | drizzle), DATABASE_URL, KEY_PREFIX, TABLE, POOL_SIZE.
 * Sends { type: 'ready', url }; closes on any message or when the parent goes.
 */
import { createTransactionApp, type AdapterName } from '../support/transaction-app';

async function main(): Promise<void> {
  const { app, pool } = await createTransactionApp({
    adapter: process.env.ADAPTER as AdapterName,
    databaseUrl: process.env.DATABASE_URL!,
    keyPrefix: process.env.KEY_PREFIX!,
    table: process.env.TABLE!,
    poolSize: Number(process.env.POOL_SIZE ?? 5),
    waitTimeoutMs: 60_000,
  });
  await app.listen(0, '127.0.0.1');
  process.send!({ type: 'ready', url: await app.getUrl() });
  process.on('message', (message: { type: string }) => {
    if (message.type === 'pool') process.send!({ type: 'pool', ...pool() });
    else void app.close().then(() => process.exit(0));
  });
}

process.on('disconnect', () => process.exit(0));
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
