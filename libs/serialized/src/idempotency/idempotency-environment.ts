import { SerializedConfigError } from '../config/serialized-config.error';
import { IDEMPOTENCY_DEFAULTS, IDEMPOTENCY_LIMITS } from './idempotency.defaults';

const L = IDEMPOTENCY_LIMITS.ttlMs;

/** What the idempotency variables accept, as the start-up error says it. */
export const IDEMPOTENCY_ENV_ACCEPTS = {
  SERIALIZED_IDEMPOTENCY_TTL_MS: `an integer number of milliseconds from ${L.min} to ${L.max} (default ${IDEMPOTENCY_DEFAULTS.ttlMs})`,
} as const;

/**
 * The default `ttlMs` of `@Idempotent`: `SERIALIZED_IDEMPOTENCY_TTL_MS`, else 24 h.
 * An empty value counts as unset.
 *
 * @throws SerializedConfigError naming the variable and what it accepts
 */
export function readIdempotencyTtlMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SERIALIZED_IDEMPOTENCY_TTL_MS?.trim();
  if (raw === undefined || raw === '') return IDEMPOTENCY_DEFAULTS.ttlMs;
  // Strict digits only: Number('1e3') and Number('0x10') are numbers too.
  const value = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= L.min && value <= L.max)) {
    throw new SerializedConfigError([
      `SERIALIZED_IDEMPOTENCY_TTL_MS=${JSON.stringify(raw)} is invalid: accepts ${IDEMPOTENCY_ENV_ACCEPTS.SERIALIZED_IDEMPOTENCY_TTL_MS}`,
    ]);
  }
  return value;
}
