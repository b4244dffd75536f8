import { OptionRowsValidator, throwIfProblems } from '../config/option-rows.validator';
import { SERIALIZED_OPTIONS_SCHEMA as S, type OptionSpec } from '../config/serialized-options.schema';
import { IDEMPOTENCY_DEFAULTS, IDEMPOTENCY_LIMITS } from './idempotency.defaults';
import type { IdempotentOptions } from './idempotent-options.interface';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function isKeyForm(value: unknown): boolean {
  if (typeof value === 'function') return true;
  return typeof value === 'string' && value.trim() !== '' && !value.split('.').some((segment) => segment === '');
}

const keyForm = (meaning: string): OptionSpec => ({
  type: 'code',
  format: 'a name or a dotted path (`user.id`), or a function (ctx) => string | number',
  check: isKeyForm,
  meaning,
});

const flag = (meaning: string): OptionSpec => ({ type: 'boolean', default: false, meaning });

/**
 * `@Idempotent`'s options, in the options schema's terms: `ttlMs` and
 * `waitTimeoutMs` (per call) are the table's own rows.
 */
const IDEMPOTENT_OPTIONS = new OptionRowsValidator<keyof IdempotentOptions>([
  ['key', keyForm('where the idempotency key is read (default the Idempotency-Key header)')],
  ['scope', keyForm('a key form whose value separates the keys of different callers')],
  ['ttlMs', S.idempotencyTtlMs],
  ['mode', { type: 'choice', values: ['wait', 'reject'], default: 'wait', meaning: 'what a duplicate does while the first runs' }],
  ['waitTimeoutMs', S.waitTimeoutMs, 'call'],
  ['required', flag('a request without a key is a 400')],
  ['storeServerErrors', flag('5xx responses are stored and replayed too')],
  [
    'fingerprint',
    {
      type: 'code',
      format: 'a function returning the request fingerprint, or false',
      check: (value) => value === false || typeof value === 'function',
      meaning: 'what makes a request with the same key "different" (422)',
    },
  ],
  [
    'headers',
    {
      type: 'code',
      format: 'an array of header names',
      check: (value) => Array.isArray(value) && value.every((h) => typeof h === 'string' && HEADER_NAME.test(h)),
      meaning: 'response headers stored beside the defaults',
    },
  ],
  [
    'maxResponseBytes',
    {
      type: 'integer',
      unit: 'count',
      default: IDEMPOTENCY_DEFAULTS.maxResponseBytes,
      ...IDEMPOTENCY_LIMITS.maxResponseBytes,
      meaning: 'largest response body stored',
    },
  ],
]);

/**
 * Checks `@Idempotent`'s options when the decorator is made, with the options
 * schema's validator.
 *
 * @throws SerializedConfigError naming each bad option, its value and what it accepts
 */
export function assertIdempotentOptions(options: IdempotentOptions): void {
  throwIfProblems(IDEMPOTENT_OPTIONS.problems(options as Record<keyof IdempotentOptions, unknown>), '@Idempotent');
}
