import { SerializationKeyError } from '../errors';
import { callOptionProblems, validateAcquire, validateAcquireOptions } from './acquire-options.validator';
import { acceptsOf, SERIALIZED_OPTIONS_SCHEMA } from './serialized-options.schema';

describe('per-call option validation', () => {
  it.each([
    [{}],
    [{ waitTimeoutMs: 0, leaseMs: 100, maxPending: 0 }],
    [{ waitTimeoutMs: 2 ** 31, leaseMs: Number.MAX_SAFE_INTEGER, maxPending: Infinity }],
    [{ mode: 'reject', signal: new AbortController().signal }],
    [{ handoff: 'strict' }],
    [{ handoff: 'cohort' }],
  ])('accepts %j', (options) => {
    expect(validateAcquireOptions(options, 'T#m')).toBeUndefined();
  });

  it.each([
    [{ waitTimeoutMs: -1 }, RangeError, 'waitTimeoutMs=-1 is invalid: accepts an integer number of milliseconds >= 0 (in T#m)'],
    [{ waitTimeoutMs: 0.5 }, RangeError, 'waitTimeoutMs=0.5 is invalid'],
    [{ waitTimeoutMs: Infinity }, RangeError, 'waitTimeoutMs=Infinity is invalid'],
    [{ waitTimeoutMs: 2 ** 53 }, RangeError, 'waitTimeoutMs=9007199254740992 is invalid'],
    [{ leaseMs: NaN }, RangeError, 'leaseMs=NaN is invalid: accepts an integer number of milliseconds >= 100 (in T#m)'],
    [{ leaseMs: 99 }, RangeError, 'leaseMs=99 is invalid'],
    [{ maxPending: -Infinity }, RangeError, 'maxPending=-Infinity is invalid: accepts an integer >= 0, or Infinity (in T#m)'],
    [{ waitTimeoutMs: '5' }, TypeError, 'waitTimeoutMs="5" is invalid'],
    [{ mode: 'later' }, TypeError, `mode="later" is invalid: accepts 'wait' or 'reject' (in T#m)`],
    [{ signal: {} }, TypeError, 'signal is invalid: accepts an AbortSignal (in T#m)'],
    [{ handoff: 'fair' }, TypeError, `handoff="fair" is invalid: accepts 'strict' or 'cohort' (in T#m)`],
    [null, TypeError, 'options=null is invalid: accepts an object (in T#m)'],
  ])('refuses %j', (options, type, message) => {
    const error = validateAcquireOptions(options as never, 'T#m');
    expect(error).toBeInstanceOf(type);
    expect(error!.message).toContain(message);
  });

  it('names every invalid option at once', () => {
    expect(callOptionProblems({ waitTimeoutMs: -1, leaseMs: 1.5, maxPending: NaN })).toHaveLength(3);
  });

  it('checks the key too, for providers', () => {
    expect(validateAcquire('k', {}, 'P#acquire')).toBeUndefined();
    expect(validateAcquire('\ud800', {}, 'P#acquire')).toBeInstanceOf(SerializationKeyError);
    expect((validateAcquire('\ud800', {}, 'P#acquire') as SerializationKeyError).problem).toBe('unencodable');
    expect((validateAcquire('', {}, 'P#acquire') as SerializationKeyError).problem).toBe('missing');
    expect(validateAcquire('k', { leaseMs: -1 }, 'P#acquire')!.message).toContain('(in P#acquire)');
  });

  it('takes its bounds and texts from the options table', () => {
    expect(acceptsOf(SERIALIZED_OPTIONS_SCHEMA.waitTimeoutMs, 'call')).toBe('an integer number of milliseconds >= 0');
    expect(acceptsOf(SERIALIZED_OPTIONS_SCHEMA.waitTimeoutMs)).toBe('an integer number of milliseconds from 0 to 86400000 (default 10000)');
    expect(acceptsOf(SERIALIZED_OPTIONS_SCHEMA.lockPoolSize)).toBe('an integer from 1 to 1000 (default 10)');
  });
});
