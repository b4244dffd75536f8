import { SerializedConfigError } from './serialized-config.error';
import { resolveSerializedOptions } from './serialized-options.resolver';

describe('resolveSerializedOptions', () => {
  it('applies the defaults with nothing set', () => {
    expect(resolveSerializedOptions({}, {})).toMatchObject({
      driver: 'memory',
      keyPrefix: 'serialized',
      leaseMs: 30_000,
      waitTimeoutMs: 10_000,
      maxPending: 1000,
    });
  });

  it('reads the environment, and options in code win over it', () => {
    const env = { SERIALIZED_DRIVER: 'redis', REDIS_URL: 'redis://h:1', SERIALIZED_LEASE_MS: '5000', SERIALIZED_KEY_PREFIX: 'app' };
    expect(resolveSerializedOptions({}, env)).toMatchObject({ driver: 'redis', redis: { url: 'redis://h:1' }, leaseMs: 5000, keyPrefix: 'app' });
    expect(resolveSerializedOptions({ driver: 'memory', leaseMs: 1000 }, env)).toMatchObject({ driver: 'memory', leaseMs: 1000 });
  });

  it("takes handoff from the options, else SERIALIZED_HANDOFF, else 'strict'; anything else stops start-up naming it", () => {
    expect(resolveSerializedOptions({}, {}).handoff).toBe('strict');
    expect(resolveSerializedOptions({}, { SERIALIZED_HANDOFF: 'cohort' }).handoff).toBe('cohort');
    expect(resolveSerializedOptions({ handoff: 'strict' }, { SERIALIZED_HANDOFF: 'cohort' }).handoff).toBe('strict');
    expect(() => resolveSerializedOptions({}, { SERIALIZED_HANDOFF: 'fifo' })).toThrow(/SERIALIZED_HANDOFF="fifo" is invalid: accepts one of strict, cohort \(default strict\)/);
    expect(() => resolveSerializedOptions({ handoff: 'fair' as 'strict' }, {})).toThrow(/options\.handoff/);
  });

  it('treats an empty variable as unset', () => {
    expect(resolveSerializedOptions({}, { SERIALIZED_LEASE_MS: '' }).leaseMs).toBe(30_000);
  });

  it('lists every problem of options and environment in one error', () => {
    const error = (() => {
      try {
        resolveSerializedOptions({ waitTimeoutMs: -5, keyPrefix: '{x}' }, { SERIALIZED_MAX_PENDING: '1e3', SERIALIZED_DRIVER: 'postgres' });
      } catch (e) {
        return e as SerializedConfigError;
      }
    })();
    expect(error).toBeInstanceOf(SerializedConfigError);
    expect(error!.problems).toEqual([
      expect.stringContaining('SERIALIZED_MAX_PENDING="1e3" is invalid'),
      expect.stringContaining('options.keyPrefix="{x}" is invalid'),
      expect.stringContaining('options.waitTimeoutMs=-5 is invalid'),
      expect.stringContaining('DATABASE_URL is required with the postgres driver'),
    ]);
  });

  it('takes errorMapping as on (default, true), false, or { body }, and names anything else', () => {
    const body = () => ({});
    expect(resolveSerializedOptions({}, {}).errorMapping).toEqual({});
    expect(resolveSerializedOptions({ errorMapping: true }, {}).errorMapping).toEqual({});
    expect(resolveSerializedOptions({ errorMapping: false }, {}).errorMapping).toBe(false);
    expect(resolveSerializedOptions({ errorMapping: { body } }, {}).errorMapping).toEqual({ body });
    for (const wrong of ['off', null, { body: 'x' }]) {
      expect(() => resolveSerializedOptions({ errorMapping: wrong as never }, {})).toThrow(/options\.errorMapping=.* is invalid: accepts true \(default\), false, or \{ body/);
    }
  });

  it('ignores REDIS_URL and DATABASE_URL when this module does not use them', () => {
    expect(() => resolveSerializedOptions({}, { REDIS_URL: 'not a url', DATABASE_URL: 'mysql://x' })).not.toThrow();
    expect(() => resolveSerializedOptions({}, { SERIALIZED_DRIVER: 'redis', REDIS_URL: 'not a url' })).toThrow('REDIS_URL="not a url" is invalid');
  });
});
