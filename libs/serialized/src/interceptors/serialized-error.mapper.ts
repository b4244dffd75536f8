import { HttpException, HttpStatus, type ExecutionContext } from '@nestjs/common';
import {
  LockBackendError,
  LockBusyError,
  LockLostError,
  LockTimeoutError,
  SerializationKeyError,
  SerializedError,
} from '../errors';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

/** The one place where the library's transport-neutral errors get a status. */
export function statusOf(error: SerializedError): number {
  if (error instanceof SerializationKeyError) return HttpStatus.BAD_REQUEST;
  if (error instanceof LockBusyError || error instanceof LockTimeoutError) return HttpStatus.TOO_MANY_REQUESTS;
  if (error instanceof LockBackendError || error instanceof LockLostError) return HttpStatus.SERVICE_UNAVAILABLE;
  return HttpStatus.INTERNAL_SERVER_ERROR;
}

/**
 * All a client learns when the lock backend cannot be used or a lock was lost:
 * no host, port, role, driver text or lock key (those go to the server log).
 */
export const UNAVAILABLE_MESSAGE = 'The lock backend is unavailable; retry later';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * Turns a library error into its transport's form: an `HttpException` (400, 429
 * and 503 with `Retry-After`) for HTTP and GraphQL, an `RpcException` or
 * `WsException` when those packages are installed. Anything else passes as is.
 * A 503 says only that the lock backend is unavailable; the caller logs the detail.
 */
export function toTransportError(error: unknown, ctx: ExecutionContext): unknown {
  if (!(error instanceof SerializedError)) return error;
  const status = statusOf(error);
  const message = status === HttpStatus.SERVICE_UNAVAILABLE ? UNAVAILABLE_MESSAGE : error.message;
  const body = { statusCode: status, error: REASONS[status], code: error.name, message };
  switch (ctx.getType<string>()) {
    case 'http':
      if (status === HttpStatus.TOO_MANY_REQUESTS || status === HttpStatus.SERVICE_UNAVAILABLE) {
        setHeader(ctx, 'Retry-After', String(SERIALIZED_DEFAULTS.retryAfterSeconds));
      }
      return new HttpException(body, status, { cause: error });
    case 'graphql':
      return new HttpException(body, status, { cause: error });
    case 'rpc':
      return wrapOptional('@nestjs/microservices', 'RpcException', body) ?? error;
    case 'ws':
      return wrapOptional('@nestjs/websockets', 'WsException', body) ?? error;
    default:
      return error;
  }
}

function setHeader(ctx: ExecutionContext, name: string, value: string): void {
  const response = ctx.switchToHttp().getResponse<{ header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown; headersSent?: boolean }>();
  if (!response || response.headersSent) return;
  // Fastify's reply has header(); Express's response has both.
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
