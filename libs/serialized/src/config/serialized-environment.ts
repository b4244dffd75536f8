import { IsIn, IsInt, IsOptional, Matches, Max, Min, validateSync } from 'class-validator';
import { redactUrls } from '../internal/redact';
import {
  acceptsOf,
  optionProblem,
  SERIALIZED_OPTIONS_SCHEMA as S,
  type OptionSpec,
  type SerializedEnvName,
} from './serialized-options.schema';

export type { SerializedEnvName } from './serialized-options.schema';
export const SERIALIZED_DRIVERS = S.driver.values;
export const KEY_PREFIX_PATTERN = S.keyPrefix.pattern;
export const REDIS_URL_PATTERN = S.redisUrl.pattern;
export const POSTGRES_URL_PATTERN = S.databaseUrl.pattern;

const SPECS: readonly OptionSpec[] = Object.values(S);
const BY_ENV = new Map<string, OptionSpec>(SPECS.map((spec) => [spec.env, spec]));

/** What each variable accepts, as the start-up error says it (from the options table). */
export const SERIALIZED_ENV_ACCEPTS = Object.fromEntries(SPECS.map((spec) => [spec.env, acceptsOf(spec)])) as Record<SerializedEnvName, string>;

/**
 * The environment variables the module reads, validated with class-validator;
 * every bound comes from the options table.
 */
export class SerializedEnvironment {
  @IsOptional() @IsIn(S.driver.values) SERIALIZED_DRIVER?: (typeof S.driver.values)[number];
  @IsOptional() @Matches(S.redisUrl.pattern) REDIS_URL?: string;
  @IsOptional() @Matches(S.databaseUrl.pattern) DATABASE_URL?: string;
  @IsOptional() @Matches(S.keyPrefix.pattern) SERIALIZED_KEY_PREFIX?: string;
  @IsOptional() @IsInt() @Min(S.leaseMs.min) @Max(S.leaseMs.max) SERIALIZED_LEASE_MS?: number;
  @IsOptional() @IsInt() @Min(S.waitTimeoutMs.min) @Max(S.waitTimeoutMs.max) SERIALIZED_WAIT_TIMEOUT_MS?: number;
  @IsOptional() @IsInt() @Min(S.maxPending.min) @Max(S.maxPending.max) SERIALIZED_MAX_PENDING?: number;
  @IsOptional() @IsInt() @Min(S.maxPendingTotal.min) @Max(S.maxPendingTotal.max) SERIALIZED_MAX_PENDING_TOTAL?: number;
  @IsOptional() @IsInt() @Min(S.connectTimeoutMs.min) @Max(S.connectTimeoutMs.max) SERIALIZED_CONNECT_TIMEOUT_MS?: number;
  @IsOptional() @IsInt() @Min(S.shutdownGraceMs.min) @Max(S.shutdownGraceMs.max) SERIALIZED_SHUTDOWN_GRACE_MS?: number;
  @IsOptional() @IsInt() @Min(S.lockPoolSize.min) @Max(S.lockPoolSize.max) SERIALIZED_PG_LOCK_POOL_SIZE?: number;
}

/**
 * Reads and validates the variables. An empty value counts as unset (as in most
 * .env files). Returns the parsed values and one problem line per invalid variable,
 * naming it, its value (credentials in URLs redacted) and what it accepts.
 */
export function readSerializedEnvironment(env: NodeJS.ProcessEnv): {
  values: SerializedEnvironment;
  problems: string[];
} {
  const values = new SerializedEnvironment() as unknown as Record<string, unknown>;
  for (const spec of SPECS) {
    const raw = env[spec.env]?.trim();
    if (raw === undefined || raw === '') continue;
    // Strict digits only: Number('30s') is NaN but Number('0x10') and Number('1e3') are not.
    values[spec.env] = spec.type === 'integer' && /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
  }
  const problems = validateSync(values, { forbidUnknownValues: false }).map((error) => {
    const spec = BY_ENV.get(error.property)!;
    return redactUrls(optionProblem(spec.env, String(error.value), acceptsOf(spec)));
  });
  return { values: values as unknown as SerializedEnvironment, problems };
}
