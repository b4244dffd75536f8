import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { lockApplicationName, sessionTimings } from './postgres-lock-provider.options';

describe('PostgresLockProvider options', () => {
  it('gives a lock session 10 s of silence by default, and the default lives in SERIALIZED_DEFAULTS', () => {
    expect(SERIALIZED_DEFAULTS.pgSessionTimeoutMs).toBe(10_000);
    expect(sessionTimings({})).toEqual({ pingEveryMs: 1000, sessionTimeoutMs: 10_000, keepaliveSeconds: 8 });
    expect(sessionTimings({ sessionTimeoutMs: 100, leaseMs: 300 })).toEqual({ pingEveryMs: 100, sessionTimeoutMs: 100, keepaliveSeconds: 1 });
  });

  it.each([0, 99, 1500.5, NaN, -1000, Infinity, '1000'])('refuses sessionTimeoutMs %p with a message naming the option', (value) => {
    expect(() => sessionTimings({ sessionTimeoutMs: value as number })).toThrow(/sessionTimeoutMs must be an integer number of milliseconds of at least 100/);
  });

  it('cuts application_name to 63 bytes without splitting a character', () => {
    const name = lockApplicationName({}, '😀'.repeat(20));
    expect(Buffer.byteLength(name, 'utf8')).toBe(62); // 18 + 11 × 4: a 12th emoji would not fit
    expect(name).toBe(`nestjs-serialized:${'😀'.repeat(11)}`);
    expect(lockApplicationName({ applicationName: 'mine' }, 'ignored')).toBe('mine');
  });
});
