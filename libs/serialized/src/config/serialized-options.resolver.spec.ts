import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { SerializedConfigError } from './serialized-config.error';
import { acceptsOf, SERIALIZED_OPTION_SPECS } from './serialized-options.schema';
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
    expect(resolveSerializedOptions({}, env)).toMatchObject({
      driver: 'redis',
      redis: { url: 'redis://h:1' },
      leaseMs: 5000,
      keyPrefix: 'app',
    });
    expect(resolveSerializedOptions({ driver: 'memory', leaseMs: 1000 }, env)).toMatchObject({ driver: 'memory', leaseMs: 1000 });
  });

  it("takes handoff from the options, else SERIALIZED_REDIS_HANDOFF, else 'strict'; anything else stops start-up naming it", () => {
    const redis = { SERIALIZED_DRIVER: 'redis', REDIS_URL: 'redis://h:1' };
    expect(resolveSerializedOptions({}, redis).redis.handoff).toBe('strict');
    expect(resolveSerializedOptions({}, { ...redis, SERIALIZED_REDIS_HANDOFF: 'cohort' }).redis.handoff).toBe('cohort');
    expect(resolveSerializedOptions({ redis: { handoff: 'strict' } }, { ...redis, SERIALIZED_REDIS_HANDOFF: 'cohort' }).redis.handoff).toBe(
      'strict',
    );
    expect(() => resolveSerializedOptions({}, { ...redis, SERIALIZED_REDIS_HANDOFF: 'fifo' })).toThrow(
      /SERIALIZED_REDIS_HANDOFF="fifo" is invalid: accepts one of strict, cohort \(default strict\)/,
    );
    expect(() => resolveSerializedOptions({ redis: { handoff: 'fair' as 'strict' } }, redis)).toThrow(/redis\.handoff/);
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
      expect(() => resolveSerializedOptions({ errorMapping: wrong as never }, {})).toThrow(
        /options\.errorMapping=.* is invalid: accepts true \(default\), false, or \{ body/,
      );
    }
  });

  it("takes the mysql driver's server from mysql.url, else MYSQL_URL, and needs one of them or mysql.pool", () => {
    const env = { SERIALIZED_DRIVER: 'mysql', MYSQL_URL: 'mysql://app:pw@db:3306/shop' };
    expect(resolveSerializedOptions({}, env)).toMatchObject({ driver: 'mysql', mysql: { url: 'mysql://app:pw@db:3306/shop' } });
    expect(resolveSerializedOptions({ mysql: { url: 'mysql://h/x' } }, env).mysql.url).toBe('mysql://h/x');
    const pool = { getConnection: () => undefined, query: () => undefined };
    expect(resolveSerializedOptions({ driver: 'mysql', mysql: { pool } }, {}).mysql).toEqual({ url: undefined, pool });
    expect(() => resolveSerializedOptions({ driver: 'mysql' }, {})).toThrow(
      'MYSQL_URL is required with the mysql driver (or pass mysql.url or mysql.pool)',
    );
    expect(() => resolveSerializedOptions({ driver: 'mysql', mysql: { pool: {} as never } }, {})).toThrow('options.mysql.pool');
    // Another driver leaves MYSQL_URL alone, whatever shape it has.
    expect(() => resolveSerializedOptions({}, { MYSQL_URL: 'jdbc:mysql://x' })).not.toThrow();
  });

  it('ignores REDIS_URL and DATABASE_URL when this module does not use them', () => {
    expect(() => resolveSerializedOptions({}, { REDIS_URL: 'not a url', DATABASE_URL: 'mysql://x' })).not.toThrow();
    expect(() => resolveSerializedOptions({}, { SERIALIZED_DRIVER: 'redis', REDIS_URL: 'not a url' })).toThrow(
      'REDIS_URL="not a url" is invalid',
    );
  });

  it('reaches provider tuning through redis: { … } and postgres: { … }, or their variables', () => {
    const env = {
      SERIALIZED_REDIS_HEARTBEAT_MS: '2000',
      SERIALIZED_PG_SESSION_TIMEOUT_MS: '4000',
      SERIALIZED_PG_CREATE_SCHEMA: 'false',
      SERIALIZED_PG_HANDOFF: 'strict',
      SERIALIZED_MAX_PENDING_TOTAL: '500',
    };
    const resolved = resolveSerializedOptions(
      {
        redis: { maxInFlight: 64 },
        postgres: { lockPoolSize: 3, idleTimeoutMs: 0, applicationName: 'orders', fencingSequence: 'locks.fence', maxLocalHandOffs: 0 },
      },
      env,
    );
    expect(resolved.maxPendingTotal).toBe(500);
    expect(resolved.redis).toMatchObject({ heartbeatMs: 2000, maxInFlight: 64 });
    expect(resolved.postgres).toMatchObject({
      lockPoolSize: 3,
      sessionTimeoutMs: 4000,
      idleTimeoutMs: 0,
      applicationName: 'orders',
      fencingSequence: 'locks.fence',
      createSchema: false,
      handoff: 'strict',
      maxLocalHandOffs: 0,
    });
    expect(resolveSerializedOptions({}, {})).toMatchObject({
      maxPendingTotal: 100_000,
      redis: { heartbeatMs: 5000, maxInFlight: 1000 },
      postgres: {
        sessionTimeoutMs: 10_000,
        idleTimeoutMs: 10_000,
        fencingSequence: 'nestjs_serialized_fencing_token',
        createSchema: true,
        handoff: 'strict',
        maxLocalHandOffs: 32,
      },
    });
  });

  it('reaches redis.replicas from code or from SERIALIZED_REDIS_REPLICA_ACKS / _TIMEOUT_MS (default none), naming a bad value and what it accepts', () => {
    expect(resolveSerializedOptions({}, {}).redis.replicas).toBeUndefined();
    expect(resolveSerializedOptions({}, { SERIALIZED_REDIS_REPLICA_ACKS: '1' }).redis.replicas).toEqual({ acks: 1, timeoutMs: 500 });
    expect(
      resolveSerializedOptions({}, { SERIALIZED_REDIS_REPLICA_ACKS: '2', SERIALIZED_REDIS_REPLICA_TIMEOUT_MS: '250' }).redis.replicas,
    ).toEqual({ acks: 2, timeoutMs: 250 });
    expect(
      resolveSerializedOptions({ redis: { replicas: { acks: 1, timeoutMs: 100 } } }, { SERIALIZED_REDIS_REPLICA_ACKS: '3' }).redis.replicas,
    ).toEqual({ acks: 1, timeoutMs: 100 });
    expect(resolveSerializedOptions({}, { SERIALIZED_REDIS_REPLICA_ACKS: '0' }).redis.replicas).toBeUndefined();
    expect(() => resolveSerializedOptions({}, { SERIALIZED_REDIS_REPLICA_ACKS: 'all' })).toThrow(
      /SERIALIZED_REDIS_REPLICA_ACKS="all" is invalid: accepts an integer from 0 to 16 \(default 0\)/,
    );
    expect(() => resolveSerializedOptions({}, { SERIALIZED_REDIS_REPLICA_TIMEOUT_MS: '0' })).toThrow(
      /SERIALIZED_REDIS_REPLICA_TIMEOUT_MS="0" is invalid: accepts an integer number of milliseconds from 1 to 60000 \(default 500\)/,
    );
    expect(() => resolveSerializedOptions({ redis: { replicas: { acks: -1, timeoutMs: 100 } } }, {})).toThrow(
      /options\.redis\.replicas\.acks=-1 is invalid/,
    );
  });

  it('refuses bad tuning in code and in the environment, all in one error', () => {
    const error = (() => {
      try {
        resolveSerializedOptions(
          { redis: { heartbeatMs: 10 }, postgres: { fencingSequence: 'drop table x', createSchema: 'no' as never }, maxPendingTotal: -1 },
          { SERIALIZED_REDIS_MAX_IN_FLIGHT: '0', SERIALIZED_PG_CREATE_SCHEMA: 'yes', SERIALIZED_MAX_PENDING_TOTAL: 'lots' },
        );
      } catch (e) {
        return e as SerializedConfigError;
      }
    })();
    expect(error).toBeInstanceOf(SerializedConfigError);
    expect(error!.problems).toEqual(
      expect.arrayContaining([
        'SERIALIZED_MAX_PENDING_TOTAL="lots" is invalid: accepts an integer from 0 to 10000000 (default 100000)',
        'SERIALIZED_REDIS_MAX_IN_FLIGHT="0" is invalid: accepts an integer from 1 to 100000 (default 1000)',
        'SERIALIZED_PG_CREATE_SCHEMA="yes" is invalid: accepts true or false (default true)',
        'options.maxPendingTotal=-1 is invalid: accepts an integer from 0 to 10000000 (default 100000)',
        'options.redis.heartbeatMs=10 is invalid: accepts an integer number of milliseconds from 100 to 600000 (default 5000)',
        expect.stringContaining('options.postgres.fencingSequence="drop table x" is invalid'),
        'options.postgres.createSchema="no" is invalid: accepts true or false (default true)',
      ]),
    );
    expect(error!.problems).toHaveLength(7);
  });

  it('takes a provider instance as it is: no URL needed, other options ignored by it', () => {
    const provider = new InMemoryLockProvider();
    expect(resolveSerializedOptions({ provider, driver: 'redis' }, {}).provider).toBe(provider);
    expect(() => resolveSerializedOptions({ provider: {} as never }, {})).toThrow(
      'options.provider={} is invalid: accepts a LockProvider instance',
    );
  });

  describe('every variable of the options table is validated (class-validator rules applied from the table)', () => {
    const bad: Record<string, string> = { integer: '12x', choice: 'nope', boolean: 'yes', text: 'bad value é' };
    const rows = SERIALIZED_OPTION_SPECS.filter(([, spec]) => spec.env !== undefined).map(([name, spec]) => [name, spec] as const);
    it.each(rows)('%s', (_name, spec) => {
      const env: Record<string, string> = { [spec.env!]: bad[spec.type] };
      // The URLs count only with their driver.
      if (spec.env === 'REDIS_URL') env.SERIALIZED_DRIVER = 'redis';
      if (spec.env === 'DATABASE_URL') env.SERIALIZED_DRIVER = 'postgres';
      if (spec.env === 'MYSQL_URL') env.SERIALIZED_DRIVER = 'mysql';
      // (What a URL accepts is cut at its example's user name: redaction never lets a credential through.)
      expect(() => resolveSerializedOptions({}, env)).toThrow(
        `${spec.env}=${JSON.stringify(bad[spec.type])} is invalid: accepts ${acceptsOf(spec).split(/postgres@|root@/)[0]}`,
      );
    });
  });
});
