import type { HandOffMode } from '../acquire-options.interface';
import type { ResolvedSerializedOptions, SerializedModuleOptions } from '../serialized-options.interface';
import { SerializedConfigError } from './serialized-config.error';
import { readSerializedEnvironment } from './serialized-environment.reader';
import { OptionRowsValidator } from './option-rows.validator';
import { replicaWaitProblem } from './provider-options.validator';
import { acceptsOf, SERIALIZED_OPTION_SPECS, SERIALIZED_OPTIONS_SCHEMA as S, type SerializedOptionName } from './serialized-options.schema';

/** The rows naming where a network driver's backend is: its URL, or an instance the app passes. */
type BackendUrl = 'redisUrl' | 'databaseUrl' | 'mysqlUrl';
type BackendInstance = 'redisClient' | 'pgPool' | 'mysqlPool';

function valueAt(options: object, path: string): unknown {
  let value: unknown = options;
  for (const part of path.split('.'))
    value = value === null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[part];
  return value;
}

/** The module options, one rule per row of the options table that has an option path. */
const MODULE_OPTIONS = new OptionRowsValidator<string>(
  SERIALIZED_OPTION_SPECS.flatMap(([, spec]) => (spec.option === undefined ? [] : [[spec.option, spec] as const])),
);

/**
 * Options given in code win; what they leave out comes from the environment, then
 * from the defaults. Every problem, in the options and in the environment, is
 * reported in one `SerializedConfigError` (credentials in URLs redacted). Which
 * options exist, their variables, bounds, defaults and texts all come from the
 * options table (`serialized-options.schema.ts`): this walks it row by row.
 */
export function resolveSerializedOptions(
  options: SerializedModuleOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedSerializedOptions {
  const { values: fromEnv, problems } = readSerializedEnvironment(env);
  const invalidEnv = new Set(problems.map((p) => p.slice(0, p.indexOf('='))));
  const given = Object.fromEntries(MODULE_OPTIONS.names().map((path) => [path, valueAt(options, path)]));
  problems.push(...MODULE_OPTIONS.problems(given, (path) => `options.${path}`));
  const v = {} as Record<SerializedOptionName, unknown>;
  for (const [name, spec] of SERIALIZED_OPTION_SPECS) {
    if (spec.option !== undefined && given[spec.option] !== undefined) {
      v[name] = given[spec.option];
    } else {
      v[name] =
        (spec.env === undefined ? undefined : fromEnv[spec.env as keyof typeof fromEnv]) ?? ('default' in spec ? spec.default : undefined);
    }
  }
  const driver = v.driver as ResolvedSerializedOptions['driver'];
  const provider = v.provider as ResolvedSerializedOptions['provider'];
  // Where the backend comes from: one of these, or the variable, is needed.
  const needs = (url: BackendUrl, instance: BackendInstance, uses: string): void => {
    if (provider || driver !== S[url].drivers[0] || v[instance] !== undefined || v[url] !== undefined || invalidEnv.has(S[url].env)) return;
    problems.push(`${S[url].env} is required with the ${driver} driver (or pass ${uses}): accepts ${acceptsOf(S[url])}`);
  };
  needs('redisUrl', 'redisClient', 'redis.url or redis.client');
  needs('databaseUrl', 'pgPool', 'postgres.connectionString or postgres.pool');
  needs('mysqlUrl', 'mysqlPool', 'mysql.url or mysql.pool');
  if (!provider && driver === 'redis') {
    const replicaWait = replicaWaitProblem(v.redisReplicaAcks, v.redisReplicaTimeoutMs, v.connectTimeoutMs, 'redis.replicas.timeoutMs');
    if (replicaWait) problems.push(replicaWait);
  }

  // REDIS_URL / DATABASE_URL may serve other parts of the app in other shapes;
  // they only count as invalid when this module would use them.
  const uses = (url: BackendUrl, instance: BackendInstance) =>
    !provider && driver === S[url].drivers[0] && v[instance] === undefined && valueAt(options, S[url].option) === undefined;
  const relevant = problems.filter(
    (p) =>
      !(p.startsWith(`${S.redisUrl.env}=`) && !uses('redisUrl', 'redisClient')) &&
      !(p.startsWith(`${S.databaseUrl.env}=`) && !uses('databaseUrl', 'pgPool')) &&
      !(p.startsWith(`${S.mysqlUrl.env}=`) && !uses('mysqlUrl', 'mysqlPool')),
  );
  if (relevant.length) throw new SerializedConfigError(relevant);
  const redisUrl = uses('redisUrl', 'redisClient') || options.redis?.url !== undefined ? (v.redisUrl as string | undefined) : undefined;
  const databaseUrl =
    uses('databaseUrl', 'pgPool') || options.postgres?.connectionString !== undefined ? (v.databaseUrl as string | undefined) : undefined;
  const mysqlUrl = uses('mysqlUrl', 'mysqlPool') || options.mysql?.url !== undefined ? (v.mysqlUrl as string | undefined) : undefined;
  const n = (name: SerializedOptionName) => v[name] as number;
  const errorMapping =
    v.errorMapping === undefined || v.errorMapping === true ? {} : (v.errorMapping as ResolvedSerializedOptions['errorMapping']);
  return {
    driver,
    provider,
    keyPrefix: v.keyPrefix as string,
    leaseMs: n('leaseMs'),
    waitTimeoutMs: n('waitTimeoutMs'),
    maxPending: n('maxPending'),
    maxPendingTotal: n('maxPendingTotal'),
    connectTimeoutMs: n('connectTimeoutMs'),
    shutdownGraceMs: n('shutdownGraceMs'),
    reentrant: v.reentrant as boolean,
    metrics: v.metrics as 'auto' | 'on' | 'off',
    tracing: v.tracing as 'auto' | 'on' | 'off',
    redis: {
      url: redisUrl,
      client: options.redis?.client,
      heartbeatMs: n('redisHeartbeatMs'),
      maxInFlight: n('redisMaxInFlight'),
      handoff: v.redisHandoff as HandOffMode,
      maxLocalHandOffs: n('redisMaxLocalHandOffs'),
      replicas: n('redisReplicaAcks') > 0 ? { acks: n('redisReplicaAcks'), timeoutMs: n('redisReplicaTimeoutMs') } : undefined,
    },
    postgres: {
      connectionString: databaseUrl,
      pool: options.postgres?.pool,
      lockPoolSize: n('lockPoolSize'),
      sessionTimeoutMs: n('pgSessionTimeoutMs'),
      idleTimeoutMs: n('pgIdleTimeoutMs'),
      applicationName: v.pgApplicationName as string | undefined,
      fencingSequence: v.pgFencingSequence as string,
      createSchema: v.pgCreateSchema as boolean,
      handoff: v.pgHandoff as HandOffMode,
      maxLocalHandOffs: n('pgMaxLocalHandOffs'),
    },
    mysql: { url: mysqlUrl, pool: options.mysql?.pool },
    idempotencyTtlMs: n('idempotencyTtlMs'),
    errorMapping,
    transaction: { query: v.transactionQuery as ResolvedSerializedOptions['transaction']['query'] },
  };
}
