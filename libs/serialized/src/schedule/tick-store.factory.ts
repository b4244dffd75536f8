import type { ScriptClient } from '../internal/lua.script';
import type { LockProvider } from '../lock.provider';
import { driverOf } from '../observability/driver-name.resolver';
import type { PostgresLockProvider } from '../providers/postgres/postgres-lock.provider';
import type { RedisLockProvider } from '../providers/redis/redis-lock.provider';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';
import { MemoryTickStore } from './memory-tick.store';
import { PostgresTickStore } from './postgres-tick.store';
import { RedisTickStore } from './redis-tick.store';
import type { TickStore } from './tick.store';

/**
 * The tick store of the module's driver, through what its provider already has:
 * the Redis provider's command client, the PostgreSQL provider's connection
 * settings (for a small pool of the store's own), or nothing (memory). `undefined`
 * for a provider of the app's own, which `@OncePerTick` cannot use.
 */
export function createTickStore(provider: LockProvider, options: ResolvedSerializedOptions): TickStore | undefined {
  switch (driverOf(provider)) {
    case 'memory':
      return new MemoryTickStore();
    case 'redis': {
      const redis = provider as RedisLockProvider;
      return new RedisTickStore({
        client: redis.client as unknown as ScriptClient,
        recordKeyOf: (name) => `${redis.redisKeysOf(`tick:${name}`).lock}:tick`,
        timeoutMs: options.connectTimeoutMs,
      });
    }
    case 'postgres': {
      const postgres = provider as PostgresLockProvider;
      return new PostgresTickStore({ ...postgres.sessionSettings, keyPrefix: postgres.keyPrefix });
    }
    default:
      return undefined;
  }
}
