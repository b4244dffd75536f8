import { HttpStatus } from '@nestjs/common';
import {
  LockBackendError,
  LockBusyError,
  LockLostError,
  LockTimeoutError,
  SerializationKeyError,
  SerializedError,
} from '../errors';
import { IdempotencyConflictError, IdempotencyKeyError, IdempotencyMismatchError } from '../idempotency/errors';
import { PROBLEM_CONTENT_TYPE, problemOf } from '../idempotency/idempotency-problem.mapper';
import { IDEMPOTENCY_DEFAULTS } from '../idempotency/idempotency.defaults';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

/**
 * The hook of `SerializedModule.forRoot({ errorMapping })`: what a client receives
 * for a library error, on every transport.
 */
export interface ErrorMappingOptions {
  /**
   * The body (HTTP), payload (`RpcException`, `WsException`) or `extensions.body`
   * (GraphQL) for `error`. `defaultBody` is what the library would send; return it
   * to keep it. Runs for every library error that escapes a request handler.
   */
  body?: (error: SerializedError, status: number, defaultBody: object) => unknown;
}

/** The one place where the library's transport-neutral errors get a status. */
export function statusOf(error: SerializedError): number {
  if (error instanceof SerializationKeyError || error instanceof IdempotencyKeyError) return HttpStatus.BAD_REQUEST;
  if (error instanceof LockBusyError || error instanceof LockTimeoutError) return HttpStatus.TOO_MANY_REQUESTS;
  if (error instanceof LockBackendError || error instanceof LockLostError) return HttpStatus.SERVICE_UNAVAILABLE;
  if (error instanceof IdempotencyConflictError) return HttpStatus.CONFLICT;
  if (error instanceof IdempotencyMismatchError) return HttpStatus.UNPROCESSABLE_ENTITY;
  return HttpStatus.INTERNAL_SERVER_ERROR;
}

/**
 * All a client learns when the lock backend cannot be used or a lock was lost:
 * no host, port, role, driver text or lock key (those go to the server log).
 */
export const UNAVAILABLE_MESSAGE = 'The lock backend is unavailable; retry later';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  409: 'Conflict',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** `extensions.code` of a GraphQL error, per status (Apollo's names where it has one). */
const GRAPHQL_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  409: 'CONFLICT',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

/** What a library error becomes, before a transport gives it its form. */
export interface MappedError {
  readonly status: number;
  /** What the client receives: the default body, or the `errorMapping.body` hook's. */
  readonly body: unknown;
  /** The text a client may see (never infrastructure detail). */
  readonly message: string;
  /** `Retry-After` in seconds, for 409, 429 and 503. */
  readonly retryAfterSeconds: number | undefined;
  /** Set when the body is an RFC 9457 problem (`@Idempotent`'s errors). */
  readonly contentType: string | undefined;
  readonly graphqlCode: string;
}

/**
 * Status, body and headers of a library error, the same for every transport:
 * 400 (key), 429 + `Retry-After` (busy, timed out), 503 + `Retry-After` (backend
 * unavailable, lock lost), and `@Idempotent`'s problem details (400, 409 +
 * `Retry-After`, 422). A 503 says only that the lock backend is unavailable; the
 * caller logs the detail.
 */
export function mapSerializedError(error: SerializedError, options: ErrorMappingOptions = {}): MappedError {
  const status = statusOf(error);
  const problem = problemOf(error);
  const message = problem?.detail ?? (status === HttpStatus.SERVICE_UNAVAILABLE ? UNAVAILABLE_MESSAGE : error.message);
  const defaultBody = problem ?? { statusCode: status, error: REASONS[status] ?? 'Error', code: error.name, message };
  const body = options.body ? options.body(error, status, defaultBody) : defaultBody;
  return {
    status,
    body,
    message,
    retryAfterSeconds: retryAfterOf(status),
    contentType: problem && body === problem ? PROBLEM_CONTENT_TYPE : undefined,
    graphqlCode: GRAPHQL_CODES[status] ?? 'INTERNAL_SERVER_ERROR',
  };
}

function retryAfterOf(status: number): number | undefined {
  if (status === HttpStatus.CONFLICT) return IDEMPOTENCY_DEFAULTS.retryAfterSeconds;
  if (status === HttpStatus.TOO_MANY_REQUESTS || status === HttpStatus.SERVICE_UNAVAILABLE) return SERIALIZED_DEFAULTS.retryAfterSeconds;
  return undefined;
}
