import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

/**
 * The one table of the library's options: for each, where it sits in the module
 * options, the environment variable, its type, bounds and default, and what it
 * accepts. Environment parsing, module option validation, `@Serialized` option
 * validation and the per-call check of `LockService.run` and the providers all
 * read their bounds and texts from here; nothing else spells a limit out.
 *
 * Bounds may differ by where a value comes from, and this table says how:
 * `min`/`max` bound the module option and its variable (a deployment setting, so
 * a typo like an extra zero is caught); `perCall` bounds a value given for one
 * call (`@Serialized`, `run`, `acquire`), which may be as large as any safe
 * integer (timers are clamped internally) and, for `maxPending`, `Infinity`.
 */
export interface IntegerOptionSpec {
  readonly type: 'integer';
  /** Path in `SerializedModuleOptions`. */
  readonly option: string;
  readonly env: string;
  readonly unit: 'ms' | 'count';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** Present when the option may also be given per call. */
  readonly perCall?: { readonly min: number; readonly infinity?: boolean };
  readonly meaning: string;
}

/** An option that takes one of a few words. */
export interface ChoiceOptionSpec {
  readonly type: 'choice';
  readonly option: string;
  readonly env: string;
  readonly values: readonly string[];
  readonly default: string;
  readonly meaning: string;
}

/** A text option checked against a pattern. `secret`: it may carry credentials (printed redacted). */
export interface TextOptionSpec {
  readonly type: 'text';
  readonly option: string;
  readonly env: string;
  readonly pattern: RegExp;
  /** What it accepts, before the default. */
  readonly format: string;
  readonly default?: string;
  readonly secret?: boolean;
  readonly meaning: string;
}

export type OptionSpec = IntegerOptionSpec | ChoiceOptionSpec | TextOptionSpec;

const HOUR_MS = 3600_000;
const D = SERIALIZED_DEFAULTS;

export const SERIALIZED_OPTIONS_SCHEMA = {
  driver: {
    type: 'choice',
    option: 'driver',
    env: 'SERIALIZED_DRIVER',
    values: ['memory', 'redis', 'postgres'],
    default: D.driver,
    meaning: 'lock backend',
  },
  redisUrl: {
    type: 'text',
    option: 'redis.url',
    env: 'REDIS_URL',
    pattern: /^rediss?:\/\/\S+$/,
    format: 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379',
    secret: true,
    meaning: 'Redis of the redis driver (unless redis.client is passed)',
  },
  databaseUrl: {
    type: 'text',
    option: 'postgres.connectionString',
    env: 'DATABASE_URL',
    pattern: /^postgres(ql)?:\/\/\S+$/,
    format: 'a postgres:// or postgresql:// URL, e.g. postgres://postgres@127.0.0.1:5432/postgres',
    secret: true,
    meaning: 'PostgreSQL of the postgres driver (unless postgres.pool is passed)',
  },
  keyPrefix: {
    type: 'text',
    option: 'keyPrefix',
    env: 'SERIALIZED_KEY_PREFIX',
    // No braces (they would break Redis Cluster hash tags) and no white space.
    pattern: /^[A-Za-z0-9_.:-]{1,64}$/,
    format: '1 to 64 characters of A-Z a-z 0-9 _ . : -',
    default: D.keyPrefix,
    meaning: 'namespace of every lock key',
  },
  leaseMs: {
    type: 'integer',
    option: 'leaseMs',
    env: 'SERIALIZED_LEASE_MS',
    unit: 'ms',
    default: D.leaseMs,
    min: 100,
    max: 24 * HOUR_MS,
    perCall: { min: 100 },
    meaning: 'lease, renewed every ~lease/3 while held',
  },
  waitTimeoutMs: {
    type: 'integer',
    option: 'waitTimeoutMs',
    env: 'SERIALIZED_WAIT_TIMEOUT_MS',
    unit: 'ms',
    default: D.waitTimeoutMs,
    min: 0,
    max: 24 * HOUR_MS,
    perCall: { min: 0 },
    meaning: "longest wait in 'wait' mode",
  },
  maxPending: {
    type: 'integer',
    option: 'maxPending',
    env: 'SERIALIZED_MAX_PENDING',
    unit: 'count',
    default: D.maxPending,
    min: 0,
    max: 10_000_000,
    perCall: { min: 0, infinity: true },
    meaning: 'waiters per key and process',
  },
  maxPendingTotal: {
    type: 'integer',
    option: 'maxPendingTotal',
    env: 'SERIALIZED_MAX_PENDING_TOTAL',
    unit: 'count',
    default: D.maxPendingTotal,
    min: 0,
    max: 10_000_000,
    meaning: 'waiters across all keys, per provider instance (process)',
  },
  connectTimeoutMs: {
    type: 'integer',
    option: 'connectTimeoutMs',
    env: 'SERIALIZED_CONNECT_TIMEOUT_MS',
    unit: 'ms',
    default: D.connectTimeoutMs,
    min: 100,
    max: 600_000,
    meaning: 'bound on reaching the backend before 503',
  },
  shutdownGraceMs: {
    type: 'integer',
    option: 'shutdownGraceMs',
    env: 'SERIALIZED_SHUTDOWN_GRACE_MS',
    unit: 'ms',
    default: D.shutdownGraceMs,
    min: 0,
    max: HOUR_MS,
    meaning: 'how long app.close() waits for running handlers',
  },
  lockPoolSize: {
    type: 'integer',
    option: 'postgres.lockPoolSize',
    env: 'SERIALIZED_PG_LOCK_POOL_SIZE',
    unit: 'count',
    default: D.pgLockPoolSize,
    min: 1,
    max: 1000,
    meaning: "connections of the library's own PostgreSQL lock pool",
  },
} as const satisfies Record<string, OptionSpec>;

export type SerializedOptionName = keyof typeof SERIALIZED_OPTIONS_SCHEMA;
/** The environment variables the library reads. */
export type SerializedEnvName = (typeof SERIALIZED_OPTIONS_SCHEMA)[SerializedOptionName]['env'];
/** Options that may also be given per call (`@Serialized`, `LockService.run`, a provider's `acquire`). */
export type PerCallOptionName = 'leaseMs' | 'waitTimeoutMs' | 'maxPending';

/** Where a value comes from: the module (options or environment) or one call. */
export type OptionScope = 'module' | 'call';

/** What an option accepts, as error messages say it. */
export function acceptsOf(spec: OptionSpec, scope: OptionScope = 'module'): string {
  switch (spec.type) {
    case 'choice':
      return `one of ${spec.values.join(', ')} (default ${spec.default})`;
    case 'text':
      return spec.default === undefined ? spec.format : `${spec.format} (default ${spec.default})`;
    case 'integer': {
      const what = spec.unit === 'ms' ? 'an integer number of milliseconds' : 'an integer';
      if (scope === 'call' && spec.perCall) {
        return `${what} >= ${spec.perCall.min}${spec.perCall.infinity ? ', or Infinity' : ''}`;
      }
      return `${what} from ${spec.min} to ${spec.max} (default ${spec.default})`;
    }
  }
}

/** Whether `value` is acceptable for the integer option `spec` given in `scope`. */
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
