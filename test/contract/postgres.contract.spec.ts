import { PostgresLockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { describeLockProviderContract, type ClosableLockProvider } from './lock-provider.contract';

let inspector: PgInspector | undefined;
const inspect = async (): Promise<PgInspector> => (inspector ??= await PgInspector.connect());

describeLockProviderContract({
  name: 'postgres',
  create: async (options) =>
    new PostgresLockProvider({
      connectionString: TEST_DATABASE_URL,
      keyPrefix: uniquePrefix('contract'),
      lockPoolSize: 5,
      ...options,
    }),
  // Advisory locks held or awaited by this provider's sessions, plus its local queue entries.
  leftovers: async (provider: ClosableLockProvider) => {
    const postgres = provider as PostgresLockProvider;
    return (await (await inspect()).advisoryLocks(postgres.applicationName)) + postgres.activeKeys;
  },
  afterAll: async () => {
    await inspector?.close();
  },
});
