import { SerializedConfigError } from '../../config/serialized-config.error';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { RedisLockProvider } from './redis-lock.provider';
import { REDIS_LOCK_DEFAULTS, REDIS_LOCK_LIMITS, resolveRedisLockOptions } from './redis-lock-provider.options';

describe('RedisLockProvider options', () => {
  it('fills in every default from one place', () => {
    expect(resolveRedisLockOptions({ url: 'redis://127.0.0.1:6379' })).toEqual({
      keyPrefix: SERIALIZED_DEFAULTS.keyPrefix,
      leaseMs: SERIALIZED_DEFAULTS.leaseMs,
      waitTimeoutMs: SERIALIZED_DEFAULTS.waitTimeoutMs,
      maxPending: SERIALIZED_DEFAULTS.maxPending,
      maxPendingTotal: SERIALIZED_DEFAULTS.maxPendingTotal,
      connectTimeoutMs: SERIALIZED_DEFAULTS.connectTimeoutMs,
      shutdownGraceMs: SERIALIZED_DEFAULTS.shutdownGraceMs,
      heartbeatMs: REDIS_LOCK_DEFAULTS.heartbeatMs,
      maxInFlight: REDIS_LOCK_DEFAULTS.maxInFlight,
      handoff: REDIS_LOCK_DEFAULTS.handoff,
      maxLocalHandOffs: REDIS_LOCK_DEFAULTS.maxLocalHandOffs,
      replicas: undefined,
    });
  });

  it('takes replicas { acks, timeoutMs } (acks 0: off), and stops on a bad one naming the option, the variables and what they accept', () => {
    expect(resolveRedisLockOptions({ replicas: { acks: 2, timeoutMs: 250 } })).toMatchObject({ replicas: { acks: 2, timeoutMs: 250 } });
    expect(resolveRedisLockOptions({ replicas: { acks: 0, timeoutMs: 250 } })).toMatchObject({ replicas: undefined });
    const problems = (replicas: unknown, more: object = {}) => {
      try {
        resolveRedisLockOptions({ replicas, ...more } as never);
        return [];
      } catch (error) {
        expect(error).toBeInstanceOf(SerializedConfigError);
        return (error as SerializedConfigError).message;
      }
    };
    expect(problems({ acks: 17, timeoutMs: 100 })).toMatch(
      /replicas\.acks=17 is invalid: accepts an integer from 0 to 16 \(default 0\) \(module option redis\.replicas\.acks, SERIALIZED_REDIS_REPLICA_ACKS\)/,
    );
    expect(problems({ acks: 1.5, timeoutMs: 100 })).toMatch(/replicas\.acks=1\.5 is invalid/);
    expect(problems({ acks: 1, timeoutMs: 0 })).toMatch(
      /replicas\.timeoutMs=0 is invalid: accepts an integer number of milliseconds from 1 to 60000 .*SERIALIZED_REDIS_REPLICA_TIMEOUT_MS/,
    );
    expect(problems({ acks: 1 })).toMatch(/replicas=\{"acks":1\} is invalid: accepts \{ acks, timeoutMs \}/);
    expect(problems('1')).toMatch(/replicas="1" is invalid: accepts \{ acks, timeoutMs \}/);
    // WAIT holds the command connection silent: it must end before the connection's silence bound.
    expect(problems({ acks: 1, timeoutMs: 3000 })).toMatch(
      /replicas\.timeoutMs=3000 is invalid: accepts a wait below connectTimeoutMs \(3000\)/,
    );
    expect(problems({ acks: 1, timeoutMs: 3000 }, { connectTimeoutMs: 5000 })).toEqual([]);
  });

  it('takes handoff and maxLocalHandOffs, and stops on a bad one naming it', () => {
    expect(resolveRedisLockOptions({ handoff: 'cohort', maxLocalHandOffs: 0 })).toMatchObject({ handoff: 'cohort', maxLocalHandOffs: 0 });
    expect(() => resolveRedisLockOptions({ handoff: 'fifo' as 'strict' })).toThrow(
      /handoff="fifo" is invalid: accepts one of strict, cohort/,
    );
    expect(() => resolveRedisLockOptions({ maxLocalHandOffs: 1001 })).toThrow(
      /maxLocalHandOffs=1001 is invalid: accepts an integer from 0 to 1000/,
    );
  });

  it('accepts heartbeatMs and maxInFlight at the ends of their ranges', () => {
    const { heartbeatMs, maxInFlight } = REDIS_LOCK_LIMITS;
    expect(resolveRedisLockOptions({ heartbeatMs: heartbeatMs.min, maxInFlight: maxInFlight.max })).toMatchObject({
      heartbeatMs: heartbeatMs.min,
      maxInFlight: maxInFlight.max,
    });
    expect(resolveRedisLockOptions({ heartbeatMs: heartbeatMs.max, maxInFlight: maxInFlight.min })).toMatchObject({
      heartbeatMs: heartbeatMs.max,
      maxInFlight: maxInFlight.min,
    });
  });

  it.each([
    ['heartbeatMs', 99],
    ['heartbeatMs', 600_001],
    ['heartbeatMs', 1500.5],
    ['heartbeatMs', Number.NaN],
    ['heartbeatMs', '5000'],
    ['maxInFlight', 0],
    ['maxInFlight', 100_001],
  ])('stops the constructor on %s = %p with a message naming the option and its range', (name, value) => {
    const build = () => new RedisLockProvider({ url: 'redis://127.0.0.1:6379', [name]: value } as never);
    expect(build).toThrow(SerializedConfigError);
    const { min, max } = REDIS_LOCK_LIMITS[name as keyof typeof REDIS_LOCK_LIMITS];
    expect(build).toThrow(new RegExp(`RedisLockProvider: option ${name}=.* is invalid: accepts an integer .*from ${min} to ${max}`));
  });
});
