import { PostgresLockProvider, type LockProvider } from 'nestjs-serialized';
import { TEST_DATABASE_URL } from '../support/services';
import { PgInspector, uniquePrefix } from '../postgres/support/pg-inspect';
import { describeLockProviderContract } from './lock-provider.contract';

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
  // Same prefix (so the same advisory lock keys and application_name), its own lock sessions.
  createPeer: async (provider, options) =>
    new PostgresLockProvider({
      connectionString: TEST_DATABASE_URL,
      keyPrefix: (provider as PostgresLockProvider).keyPrefix,
      lockPoolSize: 5,
      ...options,
    }),
  watchesHeldLocks: true,
  grantsNow: false,
  holdsTogether: true,
  // Advisory locks held or awaited by the sessions of this provider's prefix (its peer's too), plus its local queue entries.
  leftovers: async (provider: LockProvider) => {
    const postgres = provider as PostgresLockProvider;
    return (await (await inspect()).advisoryLocks(postgres.applicationName)) + postgres.activeKeys;
  },
  unownedLocks: (provider: LockProvider) => (provider as PostgresLockProvider).auditLocks(),
  afterAll: async () => {
    await inspector?.close();
  },
});
