import { LockService } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { uniquePrefix } from '../postgres/support/pg-inspect';
import { createTransactionApp, type AdapterName } from '../transaction/support/transaction-app';
import { describeRunContract } from './run.contract';

/**
 * Transaction mode (docs/transactions.md) against the run contract: two apps sharing
 * one PostgreSQL database and key prefix, each with its own pool, through each of the
 * two adapters of @nestjs-cls/transactional the suites use.
 */
for (const adapter of ['typeorm', 'drizzle'] as AdapterName[]) {
  describeRunContract({
    name: `transaction mode (${adapter})`,
    options: { transaction: true },
    open: async () => {
      const keyPrefix = uniquePrefix(`run-tx-${adapter}`);
      // The apps' reward routes are not used here: the table is never created.
      const make = () => createTransactionApp({ adapter, databaseUrl: TEST_DATABASE_URL, keyPrefix, table: 'unused', poolSize: 4 });
      const [a, b] = await Promise.all([make(), make()]);
      await Promise.all([a.app.init(), b.app.init()]);
      return {
        locks: a.app.get(LockService),
        other: b.app.get(LockService),
        close: async () => {
          await Promise.all([a.app.close(), b.app.close()]);
        },
      };
    },
  });
}
