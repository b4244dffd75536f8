import { memoryProviderOptions } from './config/provider-options.mapper';
import { unowned } from './internal/unowned-provider.proxy';
import type { LockProvider } from './lock.provider';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';
import type { ResolvedSerializedOptions } from './serialized-options.interface';

/**
 * Builds the provider `driver` names. The Redis, PostgreSQL and MySQL providers
 * are loaded only when chosen, so an app on the in-memory default needs none of
 * `ioredis`, `pg` and `mysql2`. A `provider` given in code is used instead.
 */
export function createLockProvider(options: ResolvedSerializedOptions): LockProvider {
  // Built in code: used as it is, and never shut down by the app (see `unowned`).
  if (options.provider) return unowned(options.provider);
  switch (options.driver) {
    case 'memory':
      return new InMemoryLockProvider(memoryProviderOptions(options));
    case 'redis': {
      const { RedisLockProvider } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('./providers/redis/redis-lock.provider') as typeof import('./providers/redis/redis-lock.provider');
      return RedisLockProvider.fromModuleOptions(options);
    }
    case 'postgres': {
      const { PostgresLockProvider } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('./providers/postgres/postgres-lock.provider') as typeof import('./providers/postgres/postgres-lock.provider');
      return PostgresLockProvider.fromModuleOptions(options);
    }
    case 'mysql': {
      const { MysqlLockProvider } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('./providers/mysql/mysql-lock.provider') as typeof import('./providers/mysql/mysql-lock.provider');
      return MysqlLockProvider.fromModuleOptions(options);
    }
  }
}
