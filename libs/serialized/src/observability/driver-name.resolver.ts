import type { LockProvider } from '../lock.provider';

const DRIVERS: Readonly<Record<string, string>> = {
  InMemoryLockProvider: 'memory',
  RedisLockProvider: 'redis',
  PostgresLockProvider: 'postgres',
  MysqlLockProvider: 'mysql',
};

/**
 * The driver name of `provider` (`memory`, `redis`, `postgres`, `mysql`), or its class name
 * for a provider of the app's own. Read from the class name so that naming the
 * driver never loads the Redis or PostgreSQL provider (and their drivers).
 */
export function driverOf(provider: LockProvider): string {
  let type: unknown = provider.constructor;
  // A subclass of a built-in provider (a test double, a tweak) is still that driver.
  while (typeof type === 'function' && type.name) {
    const driver = DRIVERS[type.name];
    if (driver) return driver;
    type = Object.getPrototypeOf(type);
  }
  return provider.constructor?.name || 'custom';
}
