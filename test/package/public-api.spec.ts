import * as api from 'nestjs-serialized';
import * as testing from 'nestjs-serialized/testing';

/** The package's public surface: small, and no plumbing. */
describe('public API', () => {
  const runtime = Object.keys(api);

  it('exports at most 30 runtime names from the main entry point', () => {
    expect(runtime.length).toBeGreaterThan(0);
    expect(runtime.length).toBeLessThanOrEqual(30);
  });

  it('exports no plumbing', () => {
    const plumbing = [
      'resolveSerializedOptions',
      'SERIALIZED_OPTIONS',
      'SERIALIZED_OPTIONS_METADATA',
      'SERIALIZED_DEFAULTS',
      'serializedErrorStatus',
      'SerializedMetadataAccessor',
    ];
    expect(runtime.filter((name) => plumbing.includes(name))).toEqual([]);
  });

  it('exports the public API as documented (README, docs/), and the test helpers from nestjs-serialized/testing', () => {
    for (const name of [
      'SerializedModule',
      'Serialized',
      'SerializedInterceptor',
      'LockService',
      'LockProvider',
      'InMemoryLockProvider',
      'RedisLockProvider',
      'PostgresLockProvider',
      'LockBusyError',
      'LockTimeoutError',
      'LockLostError',
      'SerializationKeyError',
      'LockBackendError',
      'Idempotent',
    ]) {
      expect(runtime).toContain(name);
    }
    expect(Object.keys(testing).sort()).toEqual(['SerializedTestingModule', 'withInMemoryLocks']);
  });
});
