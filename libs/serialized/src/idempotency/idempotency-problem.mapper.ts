import { HttpException, type ExecutionContext } from '@nestjs/common';
import { toTransportError } from '../interceptors/serialized-error.mapper';
import { IdempotencyConflictError, IdempotencyKeyError, IdempotencyMismatchError } from './errors';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';

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

/** The problem details of an `@Idempotent` error; `undefined` for any other error. */
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

/**
 * The transport's form of an error raised by `@Idempotent`: HTTP gets an
 * `HttpException` whose body is the problem details, sent as
 * `application/problem+json` (409 with `Retry-After`); RPC and WebSocket get their
 * exception with the same object. Other library errors get the library's mapping
 * (`toTransportError`); anything else passes as is.
 */
export function toIdempotencyTransportError(error: unknown, ctx: ExecutionContext): unknown {
  const problem = problemOf(error);
  if (!problem) return toTransportError(error, ctx);
  switch (ctx.getType<string>()) {
    case 'http':
      if (problem.status === 409) setHeader(ctx, 'Retry-After', String(IDEMPOTENCY_DEFAULTS.retryAfterSeconds));
      sendAsProblem(ctx, problem);
      return new HttpException(problem, problem.status, { cause: error });
    case 'graphql':
      return new HttpException(problem, problem.status, { cause: error });
    case 'rpc':
      return wrapOptional('@nestjs/microservices', 'RpcException', problem) ?? error;
    case 'ws':
      return wrapOptional('@nestjs/websockets', 'WsException', problem) ?? error;
    default:
      return error;
  }
}

interface PlatformResponse {
  raw?: unknown;
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
  headersSent?: boolean;
  json?: (body: unknown) => unknown;
  send?: (body: unknown) => unknown;
}

/**
 * Makes the body `problem`, when the exception filter sends it, go out as
 * `application/problem+json`. Nest's Express adapter would replace a Content-Type
 * set beforehand (it expects JSON for an error body), so the type is set at the
 * moment that very object is sent; an exception filter of the app that sends a
 * body of its own keeps its own Content-Type.
 */
function sendAsProblem(ctx: ExecutionContext, problem: ProblemDetails): void {
  const response = ctx.switchToHttp().getResponse<PlatformResponse>();
  if (!response || response.headersSent) return;
  // Fastify's reply has raw and send(); Express's response has json().
  const method = response.raw !== undefined ? 'send' : 'json';
  const original = response[method];
  if (typeof original !== 'function') return;
  const own = Object.getOwnPropertyDescriptor(response, method);
  response[method] = function (this: PlatformResponse, body: unknown) {
    if (own) Object.defineProperty(response, method, own);
    else delete response[method];
    if (body === problem) {
      if (typeof this.header === 'function') this.header('Content-Type', PROBLEM_CONTENT_TYPE);
      else this.setHeader?.('Content-Type', PROBLEM_CONTENT_TYPE);
    }
    return original.call(this, body);
  };
}

function setHeader(ctx: ExecutionContext, name: string, value: string): void {
  const response = ctx.switchToHttp().getResponse<PlatformResponse>();
  if (!response || response.headersSent) return;
  if (typeof response.header === 'function') response.header(name, value);
  else response.setHeader?.(name, value);
}

function wrapOptional(pkg: string, exportName: string, body: object): unknown {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Exception = require(pkg)[exportName] as new (payload: object) => unknown;
    return new Exception(body);
  } catch {
    return undefined;
  }
}
