import { IsIn, IsInt, IsOptional, Matches, Max, Min, validateSync } from 'class-validator';
import { SERIALIZED_DEFAULTS, SERIALIZED_LIMITS } from '../serialized.defaults';

export const SERIALIZED_DRIVERS = ['memory', 'redis', 'postgres'] as const;
/** No braces (they would break Redis Cluster hash tags) and no white space. */
export const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
export const REDIS_URL_PATTERN = /^rediss?:\/\/\S+$/;
export const POSTGRES_URL_PATTERN = /^postgres(ql)?:\/\/\S+$/;

const L = SERIALIZED_LIMITS;
const D = SERIALIZED_DEFAULTS;

/** What each variable accepts, as the start-up error says it. */
export const SERIALIZED_ENV_ACCEPTS = {
  SERIALIZED_DRIVER: `one of memory, redis, postgres (default ${D.driver})`,
  REDIS_URL: 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379',
  DATABASE_URL: 'a postgres:// or postgresql:// URL, e.g. postgres://postgres@127.0.0.1:5432/postgres',
  SERIALIZED_KEY_PREFIX: `1 to 64 characters of A-Z a-z 0-9 _ . : - (default ${D.keyPrefix})`,
  SERIALIZED_LEASE_MS: `an integer number of milliseconds from ${L.leaseMs.min} to ${L.leaseMs.max} (default ${D.leaseMs})`,
  SERIALIZED_WAIT_TIMEOUT_MS: `an integer number of milliseconds from ${L.waitTimeoutMs.min} to ${L.waitTimeoutMs.max} (default ${D.waitTimeoutMs})`,
  SERIALIZED_MAX_PENDING: `an integer from ${L.maxPending.min} to ${L.maxPending.max} (default ${D.maxPending})`,
  SERIALIZED_CONNECT_TIMEOUT_MS: `an integer number of milliseconds from ${L.connectTimeoutMs.min} to ${L.connectTimeoutMs.max} (default ${D.connectTimeoutMs})`,
  SERIALIZED_SHUTDOWN_GRACE_MS: `an integer number of milliseconds from ${L.shutdownGraceMs.min} to ${L.shutdownGraceMs.max} (default ${D.shutdownGraceMs})`,
  SERIALIZED_PG_LOCK_POOL_SIZE: `an integer from ${L.pgLockPoolSize.min} to ${L.pgLockPoolSize.max} (default ${D.pgLockPoolSize})`,
} as const;

export type SerializedEnvName = keyof typeof SERIALIZED_ENV_ACCEPTS;

/** The environment variables the module reads, validated with class-validator. */
export class SerializedEnvironment {
  @IsOptional() @IsIn(SERIALIZED_DRIVERS) SERIALIZED_DRIVER?: (typeof SERIALIZED_DRIVERS)[number];
  @IsOptional() @Matches(REDIS_URL_PATTERN) REDIS_URL?: string;
  @IsOptional() @Matches(POSTGRES_URL_PATTERN) DATABASE_URL?: string;
  @IsOptional() @Matches(KEY_PREFIX_PATTERN) SERIALIZED_KEY_PREFIX?: string;
  @IsOptional() @IsInt() @Min(L.leaseMs.min) @Max(L.leaseMs.max) SERIALIZED_LEASE_MS?: number;
  @IsOptional() @IsInt() @Min(L.waitTimeoutMs.min) @Max(L.waitTimeoutMs.max) SERIALIZED_WAIT_TIMEOUT_MS?: number;
  @IsOptional() @IsInt() @Min(L.maxPending.min) @Max(L.maxPending.max) SERIALIZED_MAX_PENDING?: number;
  @IsOptional() @IsInt() @Min(L.connectTimeoutMs.min) @Max(L.connectTimeoutMs.max) SERIALIZED_CONNECT_TIMEOUT_MS?: number;
  @IsOptional() @IsInt() @Min(L.shutdownGraceMs.min) @Max(L.shutdownGraceMs.max) SERIALIZED_SHUTDOWN_GRACE_MS?: number;
  @IsOptional() @IsInt() @Min(L.pgLockPoolSize.min) @Max(L.pgLockPoolSize.max) SERIALIZED_PG_LOCK_POOL_SIZE?: number;
}

const NUMERIC: ReadonlySet<string> = new Set([
  'SERIALIZED_LEASE_MS',
  'SERIALIZED_WAIT_TIMEOUT_MS',
  'SERIALIZED_MAX_PENDING',
  'SERIALIZED_CONNECT_TIMEOUT_MS',
  'SERIALIZED_SHUTDOWN_GRACE_MS',
  'SERIALIZED_PG_LOCK_POOL_SIZE',
]);

/**
 * Reads and validates the variables. An empty value counts as unset (as in most
 * .env files). Returns the parsed values and one problem line per invalid variable,
 * naming it, its value and what it accepts.
 */
export function readSerializedEnvironment(env: NodeJS.ProcessEnv): {
  values: SerializedEnvironment;
  problems: string[];
} {
  const values = new SerializedEnvironment() as unknown as Record<string, unknown>;
  for (const name of Object.keys(SERIALIZED_ENV_ACCEPTS)) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') continue;
    // Strict digits only: Number('30s') is NaN but Number('0x10') and Number('1e3') are not.
    values[name] = NUMERIC.has(name) && /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
  }
  const problems = validateSync(values, { forbidUnknownValues: false }).map((error) => {
    const name = error.property as SerializedEnvName;
    return `${name}=${JSON.stringify(String(error.value))} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS[name]}`;
  });
  return { values: values as unknown as SerializedEnvironment, problems };
}
