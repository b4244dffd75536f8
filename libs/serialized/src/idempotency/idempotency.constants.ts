/** Metadata key of `@Idempotent` (on the decorated method). */
export const IDEMPOTENT_METADATA = 'serialized:idempotent';
/** Property through which a decorated instance reaches its app's `IdempotencyService` (Nest's property injection). */
export const IDEMPOTENCY_SERVICE = Symbol.for('serialized:idempotency-service');
