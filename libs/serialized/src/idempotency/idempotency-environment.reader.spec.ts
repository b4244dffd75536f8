import { SerializedConfigError } from '../config/serialized-config.error';
import { readIdempotencyTtlMs } from './idempotency-environment.reader';

describe('SERIALIZED_IDEMPOTENCY_TTL_MS', () => {
  it('defaults to 24 h, also when empty', () => {
    expect(readIdempotencyTtlMs({})).toBe(86_400_000);
    expect(readIdempotencyTtlMs({ SERIALIZED_IDEMPOTENCY_TTL_MS: ' ' })).toBe(86_400_000);
  });

  it('reads an integer number of milliseconds', () => {
    expect(readIdempotencyTtlMs({ SERIALIZED_IDEMPOTENCY_TTL_MS: '3600000' })).toBe(3_600_000);
  });

  it.each(['1e3', '0x10', '-5', '99', '1.5', 'one day', '31536000001'])(
    'stops start-up on %p, naming the variable and what it accepts',
    (value) => {
      const error = (() => {
        try {
          readIdempotencyTtlMs({ SERIALIZED_IDEMPOTENCY_TTL_MS: value });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(SerializedConfigError);
      expect((error as SerializedConfigError).problems).toEqual([
        `SERIALIZED_IDEMPOTENCY_TTL_MS=${JSON.stringify(value)} is invalid: accepts an integer number of milliseconds from 100 to 31536000000 (default 86400000)`,
      ]);
    },
  );
});
