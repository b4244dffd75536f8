import { IdempotencyConflictError, IdempotencyKeyError, IdempotencyMismatchError } from './errors';

/** An RFC 9457 problem details object. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** The problem types of `@Idempotent` (URNs: identifiers, not pages to fetch). */
export const IDEMPOTENCY_PROBLEM_TYPES = {
  keyMissing: 'urn:nestjs-serialized:problem:idempotency-key-missing',
  keyInvalid: 'urn:nestjs-serialized:problem:idempotency-key-invalid',
  inProgress: 'urn:nestjs-serialized:problem:idempotency-request-in-progress',
  keyReused: 'urn:nestjs-serialized:problem:idempotency-key-reused',
} as const;

/**
 * The problem details of an `@Idempotent` error; `undefined` for any other error.
 * `serialized-error.mapper.ts` gives them their status and transport form.
 */
export function problemOf(error: unknown): ProblemDetails | undefined {
  const T = IDEMPOTENCY_PROBLEM_TYPES;
  if (error instanceof IdempotencyKeyError) {
    return error.problem === 'missing'
      ? { type: T.keyMissing, title: 'Idempotency-Key is missing', status: 400, detail: error.detail }
      : { type: T.keyInvalid, title: 'Idempotency-Key is invalid', status: 400, detail: error.detail };
  }
  if (error instanceof IdempotencyConflictError) {
    return {
      type: T.inProgress,
      title: 'A request with this Idempotency-Key is being processed',
      status: 409,
      detail: 'The first request with this key has not finished yet. Retry later to get its response.',
    };
  }
  if (error instanceof IdempotencyMismatchError) {
    return {
      type: T.keyReused,
      title: 'Idempotency-Key reused for a different request',
      status: 422,
      detail: 'This key was already used for a request with another method, URL or body. Use a new key for a new request.',
    };
  }
  return undefined;
}
