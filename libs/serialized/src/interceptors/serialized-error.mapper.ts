import { HttpStatus } from '@nestjs/common';
import {
  LockBackendError,
  LockBusyError,
  LockLostError,
  LockTimeoutError,
  SerializationKeyError,
  SerializedError,
  type LockBusyReason,
  type SerializationKeyProblem,
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
 * The stable, machine-readable `code` of each answer (HTTP and RPC / WebSocket
 * bodies, GraphQL `extensions.reason`). A client tells our 429 from a rate
 * limiter's by it alone.
 */
export type SerializedErrorCode =
  'SERIALIZATION_KEY_MISSING' | 'SERIALIZATION_KEY_INVALID' | 'LOCK_BUSY' | 'LOCK_TIMEOUT' | 'LOCK_BACKEND_UNAVAILABLE' | 'LOCK_LOST';

/**
 * All a client learns when the lock backend cannot be used: no host, port, role,
 * driver text or lock key (those go to the server log).
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
  /** The stable code (`LOCK_BUSY`, …); `undefined` for `@Idempotent`'s problem details, which have their own `type`. */
  readonly code: SerializedErrorCode | undefined;
}

/** The stable code of a lock or key error; `undefined` for any other library error. */
export function codeOf(error: SerializedError): SerializedErrorCode | undefined {
  if (error instanceof SerializationKeyError) {
    return error.problem === 'missing' || error.problem === 'blank' ? 'SERIALIZATION_KEY_MISSING' : 'SERIALIZATION_KEY_INVALID';
  }
  if (error instanceof LockBusyError) return 'LOCK_BUSY';
  if (error instanceof LockTimeoutError) return 'LOCK_TIMEOUT';
  if (error instanceof LockBackendError) return 'LOCK_BACKEND_UNAVAILABLE';
  if (error instanceof LockLostError) return 'LOCK_LOST';
  return undefined;
}

/**
 * What a client may read about a lock or key error: the key as written in the
 * decorator (`user.id`) and where it was looked for, never a key's value, the lock
 * key, or a class or method name — `error.message` has those, for the server log.
 */
export function clientMessageOf(error: SerializedError): string {
  if (error instanceof SerializationKeyError) return keyMessageOf(error);
  if (error instanceof LockBusyError) return BUSY_MESSAGES[error.reason];
  if (error instanceof LockTimeoutError) {
    return error.reason === 'no-connection'
      ? `No connection to the lock backend was free within ${error.waitTimeoutMs} ms; retry later`
      : `Timed out after ${error.waitTimeoutMs} ms waiting for another request with the same key to finish; retry later`;
  }
  if (error instanceof LockLostError) return 'The lock of this request was lost before it finished; retry later';
  if (error instanceof LockBackendError) return UNAVAILABLE_MESSAGE;
  return 'The request could not be serialized';
}

const BUSY_MESSAGES: Record<LockBusyReason, string> = {
  held: 'Another request with the same key is in progress; retry later',
  'max-pending': 'Too many requests with the same key are already waiting; retry later',
  'max-pending-total': 'Too many requests are already waiting; retry later',
  'shutting-down': 'The server is shutting down; retry later',
};

const KEY_PROBLEMS: Record<SerializationKeyProblem, string> = {
  missing: 'is missing or empty',
  blank: 'is only white space',
  'not-scalar': 'must be a string or a number',
  'too-long': `is longer than ${SERIALIZED_DEFAULTS.maxKeyLength} characters`,
  unencodable: 'is not well-formed Unicode (it has a lone surrogate)',
  'too-many': `names more than ${SERIALIZED_DEFAULTS.maxKeysPerSet} distinct keys`,
};

function keyMessageOf(error: SerializationKeyError): string {
  // A key function's name, and a key given to LockService.run (a lock key itself), stay in the log.
  if (error.lookedIn.length === 0) return `The lock key ${KEY_PROBLEMS[error.problem]}`;
  if (error.key?.startsWith('function ')) {
    return error.problem === 'missing'
      ? 'The key function returned nothing'
      : `The value the key function returned ${KEY_PROBLEMS[error.problem]}`;
  }
  return `Serialization key "${error.key}" ${KEY_PROBLEMS[error.problem]} (looked in ${error.lookedIn.join(', ')})`;
}

/**
 * Status, body and headers of a library error, the same for every transport:
 * 400 (key), 429 + `Retry-After` (busy, timed out), 503 + `Retry-After` (backend
 * unavailable, lock lost), each with its stable `code` and a message that names
 * no value, lock key or handler ({@link clientMessageOf}); and `@Idempotent`'s
 * problem details (400, 409 + `Retry-After`, 422). The caller logs the detail.
 */
export function mapSerializedError(error: SerializedError, options: ErrorMappingOptions = {}): MappedError {
  const status = statusOf(error);
  const problem = problemOf(error);
  const code = problem ? undefined : codeOf(error);
  const message = problem?.detail ?? clientMessageOf(error);
  const defaultBody = problem ?? { statusCode: status, error: REASONS[status] ?? 'Error', code, message };
  const body = options.body ? options.body(error, status, defaultBody) : defaultBody;
  return {
    status,
    body,
    message,
    retryAfterSeconds: retryAfterOf(status),
    contentType: problem && body === problem ? PROBLEM_CONTENT_TYPE : undefined,
    graphqlCode: GRAPHQL_CODES[status] ?? 'INTERNAL_SERVER_ERROR',
    code,
  };
}

function retryAfterOf(status: number): number | undefined {
  if (status === HttpStatus.CONFLICT) return IDEMPOTENCY_DEFAULTS.retryAfterSeconds;
  if (status === HttpStatus.TOO_MANY_REQUESTS || status === HttpStatus.SERVICE_UNAVAILABLE) return SERIALIZED_DEFAULTS.retryAfterSeconds;
  return undefined;
}
