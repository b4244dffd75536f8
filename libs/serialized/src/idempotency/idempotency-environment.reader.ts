import { readSerializedVariable } from '../config/serialized-environment.reader';
import { acceptsOf, SERIALIZED_OPTIONS_SCHEMA } from '../config/serialized-options.schema';

const TTL = SERIALIZED_OPTIONS_SCHEMA.idempotencyTtlMs;

/** What the idempotency variables accept, as the start-up error says it (from the options table). */
export const IDEMPOTENCY_ENV_ACCEPTS = {
  [TTL.env]: acceptsOf(TTL),
} as const;

/**
 * The default `ttlMs` of `@Idempotent`: `SERIALIZED_IDEMPOTENCY_TTL_MS`, else 24 h.
 * An empty value counts as unset.
 *
 * @throws SerializedConfigError naming the variable and what it accepts
 */
export function readIdempotencyTtlMs(env: NodeJS.ProcessEnv = process.env): number {
  return (readSerializedVariable(env, TTL.env) as number | undefined) ?? TTL.default;
}
