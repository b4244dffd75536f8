import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { MysqlLockProvider } from '../providers/mysql/mysql-lock.provider';
import { memoryProviderOptions, redisProviderOptions } from './provider-options.mapper';
import { validateProviderOptions } from './provider-options.validator';
import { SerializedConfigError } from './serialized-config.error';
import { resolveSerializedOptions } from './serialized-options.resolver';

const problemsOf = (build: () => unknown): readonly string[] => {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(SerializedConfigError);
    return (error as SerializedConfigError).problems;
  }
  return [];
};

describe('validateProviderOptions', () => {
  it('checks a hand-built provider by the module rows, naming the module option and the variable', () => {
    expect(problemsOf(() => new InMemoryLockProvider({ waitTimeoutMs: -1, maxPending: 1.5 }))).toEqual([
      'InMemoryLockProvider: option waitTimeoutMs=-1 is invalid: accepts an integer number of milliseconds from 0 to 86400000 (default 10000) (module option waitTimeoutMs, SERIALIZED_WAIT_TIMEOUT_MS)',
      'InMemoryLockProvider: option maxPending=1.5 is invalid: accepts an integer from 0 to 10000000 (default 1000) (module option maxPending, SERIALIZED_MAX_PENDING)',
    ]);
  });

  it('checks constructor-only rows (MySQL tuning) by the same rules', () => {
    expect(problemsOf(() => new MysqlLockProvider({ url: 'mysql://root@127.0.0.1/test', lockPoolSize: 0, fencingTable: 'a b' }))).toEqual([
      'MysqlLockProvider: option lockPoolSize=0 is invalid: accepts an integer from 1 to 1000 (default 10)',
      'MysqlLockProvider: option fencingTable="a b" is invalid: accepts name or database.name, of letters, digits, _ and $ (default nestjs_serialized_fencing)',
    ]);
  });

  it('does not check again what the module resolved', () => {
    const resolved = resolveSerializedOptions({ driver: 'redis', redis: { url: 'redis://127.0.0.1:6379' } }, {});
    // Tampered after resolution on purpose: a second check would refuse it.
    const options = redisProviderOptions(resolved);
    options.heartbeatMs = 1;
    expect(() => validateProviderOptions('RedisLockProvider', options)).not.toThrow();
    expect(() => validateProviderOptions('RedisLockProvider', { ...options })).toThrow(/option heartbeatMs=1 is invalid/);
    expect(() => new InMemoryLockProvider(memoryProviderOptions(resolveSerializedOptions({}, {})))).not.toThrow();
  });

  it('reports the replica wait at start-up too, once', () => {
    const build = () =>
      resolveSerializedOptions({ driver: 'redis', redis: { url: 'redis://127.0.0.1:6379', replicas: { acks: 1, timeoutMs: 3000 } } }, {});
    expect(problemsOf(build)).toEqual([
      'redis.replicas.timeoutMs=3000 is invalid: accepts a wait below connectTimeoutMs (3000): the WAIT holds the command connection silent while it waits',
    ]);
  });
});
