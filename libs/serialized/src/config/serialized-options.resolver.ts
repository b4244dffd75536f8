import type { ResolvedSerializedOptions, SerializedModuleOptions } from '../serialized-options.interface';
import { SerializedConfigError } from './serialized-config.error';
import { readSerializedEnvironment, type SerializedEnvironment } from './serialized-environment';
import {
  acceptsInteger,
  acceptsOf,
  optionProblem,
  SERIALIZED_OPTIONS_SCHEMA as S,
  type IntegerOptionSpec,
} from './serialized-options.schema';

/** The numeric options every provider takes, in the order problems are listed. */
const COMMON_NUMBERS = ['leaseMs', 'waitTimeoutMs', 'maxPending', 'maxPendingTotal', 'connectTimeoutMs', 'shutdownGraceMs'] as const;

/**
 * Options given in code win; what they leave out comes from the environment, then
 * from the defaults. Every problem, in the options and in the environment, is
 * reported in one `SerializedConfigError` (credentials in URLs redacted); every
 * bound and text comes from the options table (`serialized-options.schema.ts`).
 */
export function resolveSerializedOptions(
  options: SerializedModuleOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSerializedOptions {
  const { values: fromEnv, problems } = readSerializedEnvironment(env);
  const invalidEnv = new Set(problems.map((p) => p.slice(0, p.indexOf('='))));
  const fromEnvOf = (spec: { env: string }) => fromEnv[spec.env as keyof SerializedEnvironment];

  const driver = options.driver ?? fromEnv.SERIALIZED_DRIVER ?? S.driver.default;
  if (options.driver !== undefined && !(S.driver.values as readonly string[]).includes(options.driver)) {
    problems.push(optionProblem('options.driver', options.driver, acceptsOf(S.driver)));
  }

  const keyPrefix = options.keyPrefix ?? fromEnv.SERIALIZED_KEY_PREFIX ?? S.keyPrefix.default;
  if (options.keyPrefix !== undefined && !(typeof options.keyPrefix === 'string' && S.keyPrefix.pattern.test(options.keyPrefix))) {
    problems.push(optionProblem('options.keyPrefix', options.keyPrefix, acceptsOf(S.keyPrefix)));
  }

  const integer = (spec: IntegerOptionSpec, given: unknown): number => {
    if (given === undefined) return (fromEnvOf(spec) as number | undefined) ?? spec.default;
    if (!acceptsInteger(spec, given, 'module')) problems.push(optionProblem(`options.${spec.option}`, given, acceptsOf(spec)));
    return given as number;
  };
  const numbers = {} as Record<(typeof COMMON_NUMBERS)[number], number>;
  for (const name of COMMON_NUMBERS) numbers[name] = integer(S[name], options[name]);
  const lockPoolSize = integer(S.lockPoolSize, options.postgres?.lockPoolSize);

  const redis = { client: options.redis?.client, url: options.redis?.url };
  if (driver === 'redis' && !redis.client) {
    if (redis.url !== undefined) {
      if (typeof redis.url !== 'string' || !S.redisUrl.pattern.test(redis.url)) {
        problems.push(optionProblem('options.redis.url', redis.url, acceptsOf(S.redisUrl)));
      }
    } else if (fromEnv.REDIS_URL) {
      redis.url = fromEnv.REDIS_URL;
    } else if (!invalidEnv.has(S.redisUrl.env)) {
      problems.push(`${S.redisUrl.env} is required with the redis driver (or pass redis.url or redis.client): accepts ${acceptsOf(S.redisUrl)}`);
    }
  }

  const postgres = { pool: options.postgres?.pool, connectionString: options.postgres?.connectionString, lockPoolSize, createSchema: options.postgres?.createSchema };
  if (driver === 'postgres' && !postgres.pool) {
    if (postgres.connectionString !== undefined) {
      if (typeof postgres.connectionString !== 'string' || !S.databaseUrl.pattern.test(postgres.connectionString)) {
        problems.push(optionProblem('options.postgres.connectionString', postgres.connectionString, acceptsOf(S.databaseUrl)));
      }
    } else if (fromEnv.DATABASE_URL) {
      postgres.connectionString = fromEnv.DATABASE_URL;
    } else if (!invalidEnv.has(S.databaseUrl.env)) {
      problems.push(
        `${S.databaseUrl.env} is required with the postgres driver (or pass postgres.connectionString or postgres.pool): accepts ${acceptsOf(S.databaseUrl)}`,
      );
    }
  }

  // REDIS_URL / DATABASE_URL may serve other parts of the app in other shapes;
  // they only count as invalid when this module would use them.
  const relevant = problems.filter(
    (p) =>
      !(p.startsWith(`${S.redisUrl.env}=`) && (driver !== 'redis' || redis.client || options.redis?.url)) &&
      !(p.startsWith(`${S.databaseUrl.env}=`) && (driver !== 'postgres' || postgres.pool || options.postgres?.connectionString)),
  );
  if (relevant.length) throw new SerializedConfigError(relevant);

  return { driver, keyPrefix, redis, postgres, ...numbers };
}
