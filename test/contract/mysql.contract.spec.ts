import { MysqlLockProvider, type LockProvider } from 'nestjs-serialized';
import { TEST_MYSQL_URL } from '../support/services';
import { MysqlInspector, uniquePrefix } from '../mysql/support/mysql-inspect';
import { describeLockProviderContract } from './lock-provider.contract';

let inspector: MysqlInspector | undefined;
const inspect = async (): Promise<MysqlInspector> => (inspector ??= await MysqlInspector.connect());

/**
 * Named locks cannot be listed by prefix (their names are hashes, and
 * performance_schema may be off), so the suite remembers every key a provider was
 * asked for and asks the server about each name (`IS_USED_LOCK`).
 */
const keysAsked = new WeakMap<LockProvider, Set<string>>();
function recording(provider: MysqlLockProvider, keys: Set<string>): MysqlLockProvider {
  keysAsked.set(provider, keys);
  const lines = provider.lines as unknown as Record<'acquire' | 'tryAcquire', (key: string, ...rest: unknown[]) => unknown>;
  for (const method of ['acquire', 'tryAcquire'] as const) {
    const original = lines[method].bind(lines);
    lines[method] = (key: string, ...rest: unknown[]) => {
      keys.add(key);
      return original(key, ...rest);
    };
  }
  return provider;
}

describeLockProviderContract({
  name: 'mysql',
  create: async (options) =>
    recording(new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix: uniquePrefix('contract'), lockPoolSize: 5, ...options }), new Set()),
  // Same prefix (so the same lock names), its own lock sessions; the keys it is asked for count for both.
  createPeer: async (provider, options) =>
    recording(
      new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix: (provider as MysqlLockProvider).keyPrefix, lockPoolSize: 5, ...options }),
      keysAsked.get(provider)!,
    ),
  watchesHeldLocks: true,
  grantsNow: false,
  // Named locks of every key this provider (or its peer) was asked for still held on the server, plus its local queue entries.
  leftovers: async (provider: LockProvider) => {
    const mysql = provider as MysqlLockProvider;
    const names = [...(keysAsked.get(provider) ?? [])].map((key) => mysql.lockNameOf(key));
    return (await (await inspect()).held(names)) + mysql.activeKeys;
  },
  afterAll: async () => {
    await inspector?.close();
  },
});
