import type { ResolvedSerializedOptions, SerializedModuleOptions } from '../serialized-options.interface';
import { SERIALIZED_DEFAULTS, SERIALIZED_LIMITS } from '../serialized.defaults';
import { SerializedConfigError } from './serialized-config.error';
import {
  KEY_PREFIX_PATTERN,
  POSTGRES_URL_PATTERN,
  readSerializedEnvironment,
  REDIS_URL_PATTERN,
  SERIALIZED_DRIVERS,
  SERIALIZED_ENV_ACCEPTS,
} from './serialized-environment';

type NumericOption = keyof typeof NUMERIC_OPTIONS;
const NUMERIC_OPTIONS = {
  leaseMs: 'SERIALIZED_LEASE_MS',
  waitTimeoutMs: 'SERIALIZED_WAIT_TIMEOUT_MS',
  maxPending: 'SERIALIZED_MAX_PENDING',
  connectTimeoutMs: 'SERIALIZED_CONNECT_TIMEOUT_MS',
  shutdownGraceMs: 'SERIALIZED_SHUTDOWN_GRACE_MS',
} as const;

/**
 * Options given in code win; what they leave out comes from the environment, then
 * from `SERIALIZED_DEFAULTS`. Every problem, in the options and in the environment,
 * is reported in one `SerializedConfigError`.
 */
export function resolveSerializedOptions(
  options: SerializedModuleOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSerializedOptions {
  const { values: fromEnv, problems } = readSerializedEnvironment(env);
  const invalidEnv = new Set(problems.map((p) => p.slice(0, p.indexOf('='))));

  const driver = options.driver ?? fromEnv.SERIALIZED_DRIVER ?? SERIALIZED_DEFAULTS.driver;
  if (options.driver !== undefined && !(SERIALIZED_DRIVERS as readonly string[]).includes(options.driver)) {
    problems.push(`options.driver=${JSON.stringify(driver)} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS.SERIALIZED_DRIVER}`);
  }

  const keyPrefix = options.keyPrefix ?? fromEnv.SERIALIZED_KEY_PREFIX ?? SERIALIZED_DEFAULTS.keyPrefix;
  if (options.keyPrefix !== undefined && !KEY_PREFIX_PATTERN.test(options.keyPrefix)) {
    problems.push(`options.keyPrefix=${JSON.stringify(options.keyPrefix)} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS.SERIALIZED_KEY_PREFIX}`);
  }

  const numbers = {} as Record<NumericOption, number>;
  for (const [option, envName] of Object.entries(NUMERIC_OPTIONS) as [NumericOption, keyof typeof SERIALIZED_ENV_ACCEPTS][]) {
    const given = options[option];
    if (given !== undefined) {
      const { min, max } = SERIALIZED_LIMITS[option];
      if (!Number.isInteger(given) || given < min || given > max) {
        problems.push(`options.${option}=${JSON.stringify(given)} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS[envName]}`);
      }
      numbers[option] = given;
    } else {
      numbers[option] = (fromEnv[envName as keyof typeof fromEnv] as number | undefined) ?? SERIALIZED_DEFAULTS[option];
    }
  }

  const lockPoolSize =
    options.postgres?.lockPoolSize ?? fromEnv.SERIALIZED_PG_LOCK_POOL_SIZE ?? SERIALIZED_DEFAULTS.pgLockPoolSize;
  const poolLimits = SERIALIZED_LIMITS.pgLockPoolSize;
  if (!Number.isInteger(lockPoolSize) || lockPoolSize < poolLimits.min || lockPoolSize > poolLimits.max) {
    problems.push(`options.postgres.lockPoolSize=${JSON.stringify(lockPoolSize)} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS.SERIALIZED_PG_LOCK_POOL_SIZE}`);
  }

  const redis = { client: options.redis?.client, url: options.redis?.url };
  if (driver === 'redis' && !redis.client) {
    if (redis.url !== undefined) {
      if (!REDIS_URL_PATTERN.test(redis.url)) {
        problems.push(`options.redis.url=${JSON.stringify(redis.url)} is invalid: accepts ${SERIALIZED_ENV_ACCEPTS.REDIS_URL}`);
      }
    } else if (fromEnv.REDIS_URL) {
      redis.url = fromEnv.REDIS_URL;
    } else if (!invalidEnv.has('REDIS_URL')) {
      problems.push(`REDIS_URL is required with the redis driver (or pass redis.url or redis.client): accepts ${SERIALIZED_ENV_ACCEPTS.REDIS_URL}`);
    }
  }

  const postgres = { pool: options.postgres?.pool, connectionString: options.postgres?.connectionString, lockPoolSize, createSchema: options.postgres?.createSchema };
  if (driver === 'postgres' && !postgres.pool) {
    if (postgres.connectionString !== undefined) {
      if (!POSTGRES_URL_PATTERN.test(postgres.connectionString)) {
        problems.push(`options.postgres.connectionString is invalid: accepts ${SERIALIZED_ENV_ACCEPTS.DATABASE_URL}`);
      }
    } else if (fromEnv.DATABASE_URL) {
      postgres.connectionString = fromEnv.DATABASE_URL;
    } else if (!invalidEnv.has('DATABASE_URL')) {
      problems.push(`DATABASE_URL is required with the postgres driver (or pass postgres.connectionString or postgres.pool): accepts ${SERIALIZED_ENV_ACCEPTS.DATABASE_URL}`);
    }
  }

  // REDIS_URL / DATABASE_URL may serve other parts of the app in other shapes;
  // they only count as invalid when this module would use them.
  const relevant = problems.filter(
    (p) => !(p.startsWith('REDIS_URL=') && (driver !== 'redis' || redis.client || options.redis?.url)) &&
      !(p.startsWith('DATABASE_URL=') && (driver !== 'postgres' || postgres.pool || options.postgres?.connectionString)),
  );
  if (relevant.length) throw new SerializedConfigError(relevant);

  return { driver, keyPrefix, redis, postgres, ...numbers };
}
