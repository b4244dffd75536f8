import { OptionRowsValidator, throwIfProblems } from '../config/option-rows.validator';
import type { OptionSpec } from '../config/option-spec.definition';
import type { SerializedJobsOptions, ResolvedSerializedJobsOptions } from './serialized-jobs-options.interface';
import { SERIALIZED_JOBS_DEFAULTS } from './serialized-jobs-options.interface';

/** Metadata key of `@SerializedJobs` (on the processor class or its `process` method). */
export const SERIALIZED_JOBS_OPTIONS_METADATA = 'serialized:jobs-options';

/**
 * Tunes how `@Serialized` parks and wakes BullMQ jobs on this processor (class)
 * or method. Optional: without it the defaults of {@link SerializedJobsOptions} apply.
 *
 * ```ts
 * @Processor('reports')
 * @SerializedJobs({ recheckMs: 5000 })
 * export class ReportsProcessor extends WorkerHost {
 *   @Serialized('data.userId')
 *   async process(job: Job<{ userId: string }>) { ... }
 * }
 * ```
 */
export function SerializedJobs(options: SerializedJobsOptions): ClassDecorator & MethodDecorator {
  validate(options);
  return ((target: object, _propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    Reflect.defineMetadata(SERIALIZED_JOBS_OPTIONS_METADATA, { ...options }, descriptor ? (descriptor.value as object) : target);
  }) as ClassDecorator & MethodDecorator;
}

/** The options for `method` of `instance`: the method's, then its class's, then the defaults. */
export function serializedJobsOptionsOf(method: object, instance: object | undefined): ResolvedSerializedJobsOptions {
  const onMethod = Reflect.getMetadata(SERIALIZED_JOBS_OPTIONS_METADATA, method) as SerializedJobsOptions | undefined;
  const onClass = instance?.constructor
    ? (Reflect.getMetadata(SERIALIZED_JOBS_OPTIONS_METADATA, instance.constructor) as SerializedJobsOptions | undefined)
    : undefined;
  return { ...SERIALIZED_JOBS_DEFAULTS, ...stripUndefined(onClass), ...stripUndefined(onMethod) };
}

function stripUndefined(options: SerializedJobsOptions | undefined): SerializedJobsOptions {
  return Object.fromEntries(Object.entries(options ?? {}).filter(([, value]) => value !== undefined));
}

const HOUR_MS = 3600_000;
const period = (defaultMs: number, meaning: string): OptionSpec => ({
  type: 'integer',
  unit: 'ms',
  default: defaultMs,
  min: 10,
  max: 24 * HOUR_MS,
  meaning,
});

/** `@SerializedJobs`' options, in the options schema's terms, checked by its validator. */
const SERIALIZED_JOBS_OPTIONS = new OptionRowsValidator<keyof SerializedJobsOptions>([
  ['recheckMs', period(SERIALIZED_JOBS_DEFAULTS.recheckMs, "how often a parked job's place is checked")],
  ['lockRetryMs', period(SERIALIZED_JOBS_DEFAULTS.lockRetryMs, 'how soon a job whose key was busy is tried again')],
]);

function validate(options: SerializedJobsOptions): void {
  throwIfProblems(SERIALIZED_JOBS_OPTIONS.problems(options), '@SerializedJobs');
}
