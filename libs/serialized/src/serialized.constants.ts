/** Metadata key of `@Serialized` (on the handler or the class). */
export const SERIALIZED_OPTIONS_METADATA = 'serialized:options';
/** DI token of the resolved module options (`ResolvedSerializedOptions`). */
export const SERIALIZED_OPTIONS = 'serialized:resolved-options';
/** Property through which a decorated provider reaches its app's `LockService` (set by Nest's property injection). */
export const SERIALIZED_LOCK_SERVICE = Symbol.for('serialized:lock-service');
/** Nest logger context of every message the library logs. */
export const SERIALIZED_LOGGER_CONTEXT = 'nestjs-serialized';
/** Metadata key of `@SkipSerialized()` (on a handler). */
export const SKIP_SERIALIZED_METADATA = 'serialized:skip';
/** Metadata key of `@SerializedLock()` (on the handler: the parameter's index). */
export const SERIALIZED_LOCK_PARAMETER_METADATA = 'serialized:lock-parameter';
/** Metadata key of `@OncePerTick` (on the method, copied to any wrapper around it). */
export const ONCE_PER_TICK_METADATA = 'serialized:once-per-tick';
/** Property through which a `@OncePerTick` method reaches its app's `TickRunner` (set by Nest's property injection). */
export const SERIALIZED_TICK_RUNNER = Symbol.for('serialized:tick-runner');
