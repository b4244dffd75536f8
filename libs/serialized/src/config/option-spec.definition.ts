/**
 * How one row of the options table (`serialized-options.schema.ts`) is described.
 * `option` is the path in `SerializedModuleOptions` (absent: environment only),
 * `env` the variable (absent: code only), `drivers` the backends it applies to
 * (absent: all), `meaning` what the README and .env.example say about it.
 */
interface BaseOptionSpec {
  readonly option?: string;
  readonly env?: string;
  /** Driver names (`memory`, `redis`, `postgres`). */
  readonly drivers?: readonly string[];
  readonly meaning: string;
}

/**
 * Bounds may differ by where a value comes from: `min`/`max` bound the module
 * option and its variable (a deployment setting, so a typo like an extra zero is
 * caught); `perCall` bounds a value given for one call (`@Serialized`, `run`,
 * `acquire`), which may be as large as any safe integer (timers are clamped
 * internally) and, for `maxPending`, `Infinity`.
 */
export interface IntegerOptionSpec extends BaseOptionSpec {
  readonly type: 'integer';
  readonly unit: 'ms' | 'count';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** Present when the option may also be given per call. */
  readonly perCall?: { readonly min: number; readonly infinity?: boolean };
}

/** An option that takes one of a few words. */
export interface ChoiceOptionSpec extends BaseOptionSpec {
  readonly type: 'choice';
  readonly values: readonly string[];
  readonly default: string;
}

/** `true` or `false` (in the environment: the words). */
export interface BooleanOptionSpec extends BaseOptionSpec {
  readonly type: 'boolean';
  readonly default: boolean;
}

/** A text option checked against a pattern. `secret`: it may carry credentials (printed redacted). */
export interface TextOptionSpec extends BaseOptionSpec {
  readonly type: 'text';
  readonly pattern: RegExp;
  /** What it accepts, before the default. */
  readonly format: string;
  readonly default?: string;
  /** The default as the docs say it, when it is derived from other options. */
  readonly defaultText?: string;
  /** A value shown in .env.example when there is no default. */
  readonly example?: string;
  readonly secret?: boolean;
}

/** Given in code only (a client, a pool, a provider, a function): never from the environment. */
export interface CodeOptionSpec extends BaseOptionSpec {
  readonly type: 'code';
  readonly format: string;
  readonly check: (value: unknown) => boolean;
  readonly defaultText?: string;
}

export type OptionSpec = IntegerOptionSpec | ChoiceOptionSpec | BooleanOptionSpec | TextOptionSpec | CodeOptionSpec;

/** Where a value comes from: the module (options or environment) or one call. */
export type OptionScope = 'module' | 'call';

/** The default as the docs and messages print it (`undefined`: none). */
export function defaultOf(spec: OptionSpec): string | undefined {
  if (spec.type === 'code') return spec.defaultText;
  if (spec.type === 'text') return spec.defaultText ?? spec.default;
  return String(spec.default);
}

/** What an option accepts, as error messages say it. */
export function acceptsOf(spec: OptionSpec, scope: OptionScope = 'module'): string {
  const fallback = defaultOf(spec);
  const withDefault = (what: string) => (fallback === undefined ? what : `${what} (default ${fallback})`);
  switch (spec.type) {
    case 'choice':
      return withDefault(`one of ${spec.values.join(', ')}`);
    case 'boolean':
      return withDefault('true or false');
    case 'text':
      return withDefault(spec.format);
    case 'code':
      // Its format says which value is the default, in its own words.
      return spec.format;
    case 'integer': {
      const what = spec.unit === 'ms' ? 'an integer number of milliseconds' : 'an integer';
      if (scope === 'call' && spec.perCall) {
        return `${what} >= ${spec.perCall.min}${spec.perCall.infinity ? ', or Infinity' : ''}`;
      }
      return withDefault(`${what} from ${spec.min} to ${spec.max}`);
    }
  }
}

/**
 * Whether `value` is acceptable for the integer option `spec` given in `scope`:
 * the allocation-free check `LockService.run` and the providers' `acquire` make on
 * every call (config/acquire-options.validator.ts). Configuration (module options,
 * variables, constructors, decorators) is checked by option-rows.validator.ts,
 * from the same row.
 */
export function acceptsInteger(spec: IntegerOptionSpec, value: unknown, scope: OptionScope): boolean {
  if (typeof value !== 'number') return false;
  if (scope === 'call' && spec.perCall) {
    return (Number.isSafeInteger(value) && value >= spec.perCall.min) || (spec.perCall.infinity === true && value === Infinity);
  }
  return Number.isInteger(value) && value >= spec.min && value <= spec.max;
}

/** A value as a problem line shows it: numbers as written (`NaN`, `1.5`), anything else as JSON. */
export function showValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** One problem line: `<label>=<value> is invalid: accepts <what>`. */
export function optionProblem(label: string, value: unknown, accepts: string): string {
  return `${label}=${showValue(value)} is invalid: accepts ${accepts}`;
}
