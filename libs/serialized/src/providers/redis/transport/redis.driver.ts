import { SerializedConfigError } from '../../../config/serialized-config.error';

/** The `ioredis` module, loaded only when the Redis driver is used. */
export type IoRedis = typeof import('ioredis');

/**
 * Loads the optional peer dependency `ioredis`. The library's entry point exports
 * `RedisLockProvider`, so nothing may load `ioredis` before a Redis provider is
 * actually built: apps on the in-memory or PostgreSQL driver need not install it.
 */
export function loadIoredis(load: (id: string) => unknown = require): IoRedis {
  try {
    return load('ioredis') as IoRedis;
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes("'ioredis'")) {
      throw new SerializedConfigError(["driver 'redis' needs the optional peer dependency ioredis: npm install ioredis"]);
    }
    throw error;
  }
}
