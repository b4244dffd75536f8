import { redactUrls } from '../internal/secrets.redact';
import { OptionRowsValidator, throwIfProblems } from './option-rows.validator';
import {
  acceptsOf,
  optionProblem,
  SERIALIZED_OPTION_SPECS,
  SERIALIZED_OPTIONS_SCHEMA as S,
  type OptionSpec,
  type SerializedEnvName,
} from './serialized-options.schema';

export type { SerializedEnvName } from './serialized-options.schema';

export const SERIALIZED_DRIVERS = S.driver.values;
export const KEY_PREFIX_PATTERN = S.keyPrefix.pattern;
export const REDIS_URL_PATTERN = S.redisUrl.pattern;
export const POSTGRES_URL_PATTERN = S.databaseUrl.pattern;

type EnvSpec = OptionSpec & { readonly env: SerializedEnvName };
const SPECS: readonly EnvSpec[] = SERIALIZED_OPTION_SPECS.map(([, spec]) => spec).filter((spec): spec is EnvSpec => spec.env !== undefined);

/** What each variable accepts, as the start-up error says it (from the options table). */
export const SERIALIZED_ENV_ACCEPTS = Object.fromEntries(SPECS.map((spec) => [spec.env, acceptsOf(spec)])) as Record<
  SerializedEnvName,
  string
>;

/**
 * The environment variables the module reads, validated with class-validator.
 * Its rules are not written out here: each row of the options table with a
 * variable is a rule of this validator, so a new row is validated with no edit here.
 */
const ENVIRONMENT = new OptionRowsValidator<SerializedEnvName>(SPECS.map((spec) => [spec.env, spec]));

/** A variable's text as the validator sees it: digits become numbers, `true`/`false` booleans. */
function parse(spec: EnvSpec, raw: string): unknown {
  // Strict digits only: Number('30s') is NaN but Number('0x10') and Number('1e3') are not.
  if (spec.type === 'integer') return /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
  if (spec.type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  return raw;
}

/**
 * Reads and validates the variables. An empty value counts as unset (as in most
 * .env files). Returns the parsed values and one problem line per invalid variable,
 * naming it, its value (credentials in URLs redacted) and what it accepts.
 */
export function readSerializedEnvironment(env: NodeJS.ProcessEnv): {
  values: Partial<Record<SerializedEnvName, unknown>>;
  problems: string[];
} {
  const values: Partial<Record<SerializedEnvName, unknown>> = {};
  for (const spec of SPECS) {
    const raw = env[spec.env]?.trim();
    if (raw !== undefined && raw !== '') values[spec.env] = parse(spec, raw);
  }
  // Shown as written (`"1e3"`, `"30s"`), whatever it was parsed into.
  const problems = ENVIRONMENT.invalid(values).map((name) =>
    redactUrls(optionProblem(name, String(values[name as SerializedEnvName]), ENVIRONMENT.accepts(name as SerializedEnvName))),
  );
  return { values, problems };
}

/**
 * One variable, read and validated as {@link readSerializedEnvironment} does
 * (for a part of the library that reads it on its own, such as `@Idempotent`'s
 * default `ttlMs`). `undefined` when it is unset or empty.
 *
 * @throws SerializedConfigError naming the variable, its value and what it accepts
 */
export function readSerializedVariable(env: NodeJS.ProcessEnv, name: SerializedEnvName): unknown {
  const { values, problems } = readSerializedEnvironment({ [name]: env[name] });
  throwIfProblems(problems);
  return values[name];
}
