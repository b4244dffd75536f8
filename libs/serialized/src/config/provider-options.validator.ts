import { OptionRowsValidator, throwIfProblems } from './option-rows.validator';
import { optionProblem, showValue, type OptionSpec } from './option-spec.definition';
import { PROVIDER_CONSTRUCTOR_OPTIONS } from './provider-tuning.schema';
import { SERIALIZED_OPTION_SPECS, SERIALIZED_OPTIONS_SCHEMA as S } from './serialized-options.schema';

/** The providers whose constructors take flat options. */
export type ProviderName = 'InMemoryLockProvider' | 'RedisLockProvider' | 'PostgresLockProvider' | 'MysqlLockProvider';

/** Each provider's module options section (`redis: { … }`), whose rows it takes under their last segments. */
const SECTION: Record<ProviderName, string | undefined> = {
  InMemoryLockProvider: undefined,
  RedisLockProvider: 'redis',
  PostgresLockProvider: 'postgres',
  MysqlLockProvider: 'mysql',
};

/** The module options every provider takes under the same name (`LockProviderCommonOptions`). */
const COMMON = [S.keyPrefix, S.leaseMs, S.waitTimeoutMs, S.maxPending, S.maxPendingTotal, S.connectTimeoutMs, S.shutdownGraceMs];
/** The in-memory provider has no key prefix and no connection (`InMemoryLockProviderOptions`). */
const IN_MEMORY = COMMON.filter((spec) => spec !== S.keyPrefix && spec !== S.connectTimeoutMs);

/** A provider's rows: the common ones, its section's (`redis.heartbeatMs` → `heartbeatMs`) and its constructor-only ones. */
function rowsOf(provider: ProviderName): (readonly [string, OptionSpec])[] {
  const section = SECTION[provider];
  const rows: (readonly [string, OptionSpec])[] = (section === undefined ? IN_MEMORY : COMMON).map((spec) => [spec.option, spec] as const);
  if (section === undefined) return rows;
  for (const [, spec] of SERIALIZED_OPTION_SPECS) {
    if (spec.option?.startsWith(`${section}.`)) rows.push([spec.option.slice(section.length + 1), spec]);
  }
  for (const spec of Object.values(PROVIDER_CONSTRUCTOR_OPTIONS)) {
    if (spec.provider === provider) rows.push([spec.name, spec]);
  }
  return rows;
}

const VALIDATORS = new Map<ProviderName, { readonly rows: OptionRowsValidator<string>; readonly specs: Map<string, OptionSpec> }>();

function validatorOf(provider: ProviderName) {
  let found = VALIDATORS.get(provider);
  if (!found) {
    const rows = rowsOf(provider);
    found = { rows: new OptionRowsValidator(rows), specs: new Map(rows) };
    VALIDATORS.set(provider, found);
  }
  return found;
}

/** Options objects the module built from options it validated already (config/provider-options.mapper.ts). */
const FROM_VALIDATED_MODULE_OPTIONS = new WeakSet<object>();

/** Marks options the module resolved (and so validated): the provider does not check them again. */
export function fromValidatedModuleOptions<T extends object>(options: T): T {
  FROM_VALIDATED_MODULE_OPTIONS.add(options);
  return options;
}

function valueAt(options: object, path: string): unknown {
  let value: unknown = options;
  for (const part of path.split('.'))
    value = value === null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[part];
  return value;
}

/**
 * The one check of a provider's constructor options, by the options schema's rows
 * (the same rules as the module options and their variables). Options the module
 * built are not checked again.
 *
 * @throws SerializedConfigError listing each bad option, its value, what it accepts,
 *   and the module option and variable that set it
 */
export function validateProviderOptions(provider: ProviderName, options: object): void {
  if (FROM_VALIDATED_MODULE_OPTIONS.has(options)) return;
  if (options === null || typeof options !== 'object') {
    throwIfProblems([`options=${showValue(options)} is invalid: accepts an object`], provider);
  }
  const { rows, specs } = validatorOf(provider);
  const values = Object.fromEntries(rows.names().map((name) => [name, valueAt(options, name)]));
  const problems = rows.invalid(values).map((name) => {
    const spec = specs.get(name)!;
    const where = [spec.option && `module option ${spec.option}`, spec.env].filter(Boolean).join(', ');
    return `${optionProblem(`option ${name}`, values[name], rows.accepts(name))}${where ? ` (${where})` : ''}`;
  });
  if (provider === 'RedisLockProvider') {
    const replicas = (options as { replicas?: unknown }).replicas;
    if (
      replicas !== undefined &&
      (replicas === null ||
        typeof replicas !== 'object' ||
        valueAt(replicas, 'acks') === undefined ||
        valueAt(replicas, 'timeoutMs') === undefined)
    ) {
      problems.push(
        optionProblem(
          'option replicas',
          replicas,
          `{ acks, timeoutMs } (module option redis.replicas, ${S.redisReplicaAcks.env} / ${S.redisReplicaTimeoutMs.env})`,
        ),
      );
    }
    const connectTimeoutMs = values.connectTimeoutMs ?? S.connectTimeoutMs.default;
    const replicaWait = replicaWaitProblem(
      values['replicas.acks'],
      values['replicas.timeoutMs'],
      connectTimeoutMs,
      'option replicas.timeoutMs',
    );
    if (replicaWait) problems.push(replicaWait);
  }
  throwIfProblems(problems, provider);
}

/**
 * Replica acknowledgements (`acks` > 0) must be waited for below `connectTimeoutMs`:
 * a `WAIT` holds the command connection silent while it waits, and a longer one
 * would trip the connection's silence bound for every command behind it. Checked
 * only once both numbers are valid on their own.
 */
export function replicaWaitProblem(acks: unknown, timeoutMs: unknown, connectTimeoutMs: unknown, label: string): string | undefined {
  const whole = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n);
  if (!whole(acks) || acks <= 0 || !whole(timeoutMs) || !whole(connectTimeoutMs) || timeoutMs < connectTimeoutMs) return undefined;
  return optionProblem(
    label,
    timeoutMs,
    `a wait below connectTimeoutMs (${connectTimeoutMs}): the WAIT holds the command connection silent while it waits`,
  );
}
