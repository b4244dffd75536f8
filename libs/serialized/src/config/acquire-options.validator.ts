import { HAND_OFF_MODES } from '../acquire-options.interface';
import { SerializationKeyError } from '../errors/serialization-key.error';
import { hasLoneSurrogate } from '../key/lock-key.composer';
import {
  CONCURRENCY_OPTION,
  acceptsInteger,
  acceptsOf,
  optionProblem,
  SERIALIZED_OPTIONS_SCHEMA as S,
  showValue,
  type PerCallOptionName,
} from './serialized-options.schema';

const PER_CALL: readonly PerCallOptionName[] = ['waitTimeoutMs', 'leaseMs', 'maxPending'];
const NUMBERS: readonly (PerCallOptionName | 'concurrency')[] = [...PER_CALL, 'concurrency'];
const MODES: readonly unknown[] = ['wait', 'reject'];
const HANDOFFS: readonly unknown[] = HAND_OFF_MODES;

/** The per-call options any caller may pass (`@Serialized`, `LockService.run`, a provider's `acquire`). */
export interface CallOptions {
  waitTimeoutMs?: number;
  leaseMs?: number;
  maxPending?: number;
  mode?: string;
  signal?: AbortSignal;
  reentrant?: boolean;
  handoff?: string;
  concurrency?: number;
  shared?: boolean;
}

function acceptsConcurrency(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= CONCURRENCY_OPTION.min && (value as number) <= CONCURRENCY_OPTION.max;
}

function isAbortSignal(signal: unknown): boolean {
  return typeof (signal as AbortSignal | null)?.aborted === 'boolean' && typeof (signal as AbortSignal).addEventListener === 'function';
}

/**
 * One problem line per invalid per-call option (none: `[]`). Per call, numbers
 * may be as large as any safe integer (timers are clamped where they are armed)
 * and `maxPending` may be `Infinity`; fractions, `NaN`, negatives and non-numbers
 * are refused. Bounds and texts come from the options table.
 */
export function callOptionProblems(options: CallOptions): string[] {
  const problems: string[] = [];
  for (const name of PER_CALL) {
    const value = options[name];
    if (value !== undefined && !acceptsInteger(S[name], value, 'call'))
      problems.push(optionProblem(name, value, acceptsOf(S[name], 'call')));
  }
  if (options.mode !== undefined && !MODES.includes(options.mode)) problems.push(optionProblem('mode', options.mode, "'wait' or 'reject'"));
  if (options.signal !== undefined && !isAbortSignal(options.signal)) problems.push(`signal is invalid: accepts an AbortSignal`);
  if (options.reentrant !== undefined && typeof options.reentrant !== 'boolean')
    problems.push(optionProblem('reentrant', options.reentrant, 'true or false'));
  if (options.handoff !== undefined && !HANDOFFS.includes(options.handoff))
    problems.push(optionProblem('handoff', options.handoff, "'strict' or 'cohort'"));
  if (options.concurrency !== undefined && !acceptsConcurrency(options.concurrency))
    problems.push(optionProblem('concurrency', options.concurrency, `an integer ${CONCURRENCY_OPTION.min}-${CONCURRENCY_OPTION.max}`));
  if (options.shared !== undefined && typeof options.shared !== 'boolean')
    problems.push(optionProblem('shared', options.shared, 'true or false'));
  else if (options.shared === true && typeof options.concurrency === 'number' && options.concurrency > 1)
    problems.push(
      `shared=true with concurrency=${showValue(options.concurrency)} is invalid: shared holders are not counted, so the two do not go together (pass one of them)`,
    );
  return problems;
}

/**
 * Checks the options of one acquisition; returns the error to reject with, or
 * `undefined` when they are fine. Callers reject their promise with it (never a
 * synchronous throw). `where` is the `Class#method` that asked, or the API called
 * (`LockService#run`, `RedisLockProvider#acquire`).
 *
 * Cheap when nothing is wrong: a few `typeof` checks, no allocation.
 * @internal
 */
export function validateAcquireOptions(options: CallOptions | undefined, where: string): Error | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object')
    return new TypeError(`options=${showValue(options)} is invalid: accepts an object (in ${where})`);
  const { waitTimeoutMs, leaseMs, maxPending, mode, signal, reentrant, handoff, concurrency, shared } = options;
  // The common case (every request of a decorated handler) allocates nothing.
  if (
    (waitTimeoutMs === undefined || acceptsInteger(S.waitTimeoutMs, waitTimeoutMs, 'call')) &&
    (leaseMs === undefined || acceptsInteger(S.leaseMs, leaseMs, 'call')) &&
    (maxPending === undefined || acceptsInteger(S.maxPending, maxPending, 'call')) &&
    (mode === undefined || MODES.includes(mode)) &&
    (signal === undefined || isAbortSignal(signal)) &&
    (reentrant === undefined || typeof reentrant === 'boolean') &&
    (handoff === undefined || HANDOFFS.includes(handoff)) &&
    (concurrency === undefined || acceptsConcurrency(concurrency)) &&
    (shared === undefined || shared === false || (shared === true && (concurrency === undefined || concurrency === 1)))
  ) {
    return undefined;
  }
  const problems = callOptionProblems(options);
  const message = `${problems.join('; ')} (in ${where})`;
  // A number out of what is accepted is a RangeError; anything else (text for a number, an unknown mode) a TypeError.
  const outOfRange = problems.every((problem) =>
    NUMBERS.some((name) => problem.startsWith(`${name}=`) && typeof options[name] === 'number'),
  );
  return outOfRange ? new RangeError(message) : new TypeError(message);
}

/**
 * {@link validateAcquireOptions} plus the key itself: a string that is not empty
 * and has no lone surrogate (which UTF-8 would turn into U+FFFD, so distinct keys
 * would share one lock in Redis and PostgreSQL but not in memory). What providers
 * call first in `acquire` and `tryAcquire`, rejecting with the result.
 * @internal
 */
export function validateAcquire(key: string, options: CallOptions | undefined, where: string): Error | undefined {
  if (typeof key !== 'string' || key === '') {
    return new SerializationKeyError(String(key), typeof key === 'string' ? 'missing' : 'not-scalar', [], where);
  }
  if (hasLoneSurrogate(key)) return new SerializationKeyError(key, 'unencodable', [], where);
  return validateAcquireOptions(options, where);
}
