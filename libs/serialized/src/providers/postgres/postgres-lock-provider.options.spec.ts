import { SerializedConfigError } from '../../config/serialized-config.error';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { PostgresLockProvider } from './postgres-lock.provider';
import { lockApplicationName, sessionTimings } from './postgres-lock-provider.options';

describe('PostgresLockProvider options', () => {
  it('gives a lock session 10 s of silence by default, and the default lives in SERIALIZED_DEFAULTS', () => {
    expect(SERIALIZED_DEFAULTS.pgSessionTimeoutMs).toBe(10_000);
    expect(sessionTimings({})).toEqual({ pingEveryMs: 1000, sessionTimeoutMs: 10_000, keepaliveSeconds: 8 });
    expect(sessionTimings({ sessionTimeoutMs: 100, leaseMs: 300 })).toEqual({
      pingEveryMs: 100,
      sessionTimeoutMs: 100,
      keepaliveSeconds: 1,
    });
  });

  it.each([0, 99, 1500.5, NaN, -1000, Infinity, '1000'])('refuses sessionTimeoutMs %p with a message naming the option', (value) => {
    const build = () => new PostgresLockProvider({ connectionString: 'postgres://127.0.0.1/none', sessionTimeoutMs: value as number });
    expect(build).toThrow(SerializedConfigError);
    expect(build).toThrow(
      /PostgresLockProvider: option sessionTimeoutMs=.* is invalid: accepts an integer number of milliseconds from 100 to 3600000 .*SERIALIZED_PG_SESSION_TIMEOUT_MS/,
    );
  });

  it('refuses every bad option at once, handoff and maxLocalHandOffs too', () => {
    expect(
      () => new PostgresLockProvider({ handoff: 'fifo' as never, maxLocalHandOffs: -1, lockPoolSize: 0, fencingSequence: 'a;b' }),
    ).toThrow(
      /lockPoolSize=0 is invalid.*\n.*fencingSequence="a;b" is invalid.*\n.*handoff="fifo" is invalid.*\n.*maxLocalHandOffs=-1 is invalid/,
    );
  });

  it('cuts application_name to 63 bytes without splitting a character', () => {
    const name = lockApplicationName({}, '😀'.repeat(20));
    expect(Buffer.byteLength(name, 'utf8')).toBe(62); // 18 + 11 × 4: a 12th emoji would not fit
    expect(name).toBe(`nestjs-serialized:${'😀'.repeat(11)}`);
    expect(lockApplicationName({ applicationName: 'mine' }, 'ignored')).toBe('mine');
  });
});
