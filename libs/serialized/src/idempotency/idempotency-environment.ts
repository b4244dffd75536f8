import { SerializedConfigError } from '../config/serialized-config.error';
import { acceptsInteger, acceptsOf, optionProblem, SERIALIZED_OPTIONS_SCHEMA } from '../config/serialized-options.schema';

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
  const raw = env[TTL.env]?.trim();
  if (raw === undefined || raw === '') return TTL.default;
  // Strict digits only: Number('1e3') and Number('0x10') are numbers too.
  const value = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!acceptsInteger(TTL, value, 'module')) throw new SerializedConfigError([optionProblem(TTL.env, raw, acceptsOf(TTL))]);
  return value;
}
