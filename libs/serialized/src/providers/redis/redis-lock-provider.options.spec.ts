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
    expect(problems({ acks: 17, timeoutMs: 100 })).toMatch(/replicas\.acks must be a whole number of replicas from 0 to 16 \(0: none\) \(module redis\.replicas, SERIALIZED_REDIS_REPLICA_ACKS .*got 17/);
    expect(problems({ acks: 1.5, timeoutMs: 100 })).toMatch(/replicas\.acks must be .*got 1\.5/);
    expect(problems({ acks: 1, timeoutMs: 0 })).toMatch(/replicas\.timeoutMs must be a whole number of milliseconds from 1 to 60000 .*SERIALIZED_REDIS_REPLICA_TIMEOUT_MS.*got 0/);
    expect(problems({ acks: 1 })).toMatch(/replicas\.timeoutMs must be .*got undefined/);
    expect(problems('1')).toMatch(/replicas must be \{ acks, timeoutMs \}/);
    // WAIT holds the command connection silent: it must end before the connection's silence bound.
    expect(problems({ acks: 1, timeoutMs: 3000 })).toMatch(/replicas\.timeoutMs \(3000\) must be below connectTimeoutMs \(3000\)/);
    expect(problems({ acks: 1, timeoutMs: 3000 }, { connectTimeoutMs: 5000 })).toEqual([]);
  });

  it('takes handoff and maxLocalHandOffs, and stops on a bad one naming it', () => {
    expect(resolveRedisLockOptions({ handoff: 'cohort', maxLocalHandOffs: 0 })).toMatchObject({ handoff: 'cohort', maxLocalHandOffs: 0 });
    expect(() => resolveRedisLockOptions({ handoff: 'fifo' as 'strict' })).toThrow(/handoff must be 'strict' or 'cohort', got fifo/);
    expect(() => resolveRedisLockOptions({ maxLocalHandOffs: 1001 })).toThrow(/maxLocalHandOffs must be a whole number from 0 to 1000/);
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
    expect(build).toThrow(new RegExp(`${name} must be a whole number .*from ${min} to ${max}`));
  });
});
