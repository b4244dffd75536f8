import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { SerializedError } from '../errors';
import type { BackendOutageLog } from '../interceptors/backend-outage.log';
import { redactUrls } from '../internal/secrets.redact';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { mapSerializedError, type ErrorMappingOptions, type MappedError } from '../interceptors/serialized-error.mapper';
import { loadTransportPackage } from './transport-packages.loader';

/**
 * Answers every library error (`SerializedError` and its subclasses: the lock
 * errors and `@Idempotent`'s) that escapes a request handler — thrown by the
 * interceptor, a decorated service method, `LockService.run` or a provider — in
 * its transport's form, never as a 500:
 * - HTTP (Express, Fastify): the status, `Retry-After` on 409/429/503, the body
 *   (problem details as `application/problem+json` for `@Idempotent`'s errors);
 * - GraphQL: a `GraphQLError` with `extensions.code` (`TOO_MANY_REQUESTS`, …),
 *   `extensions.reason` (the stable code, `LOCK_BUSY`, …), `extensions.status`,
 *   `extensions.body`, and the HTTP status and `Retry-After` through
 *   `extensions.http` (Apollo Server sets them on the response);
 * - microservices: an `RpcException` whose payload is the body;
 * - WebSocket gateways: a `WsException` whose payload is the body.
 *
 * `SerializedModule` registers it as a global filter (`APP_FILTER`) unless
 * `errorMapping: false`. It catches only the library's errors, so the app's own
 * filters keep every other error; a catch-all filter (`@Catch()`) that Nest tries
 * first gets ours too and may hand them here: inject this filter and call
 * `catch(error, host)` for a `SerializedError`.
 *
 * The client's answer names no key value, lock key or handler; the full error
 * (`Class#method`, the lock key, the backend's words, URLs redacted) is logged at
 * debug level for each answer.
 */
@Catch(SerializedError)
export class SerializedExceptionFilter implements ExceptionFilter<SerializedError> {
  constructor(
    private readonly adapterHost: HttpAdapterHost | undefined,
    private readonly outages: BackendOutageLog,
    private readonly options: ErrorMappingOptions = {},
  ) {}

  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);

  catch(error: SerializedError, host: ArgumentsHost): unknown {
    const mapped = mapSerializedError(error, this.options);
    this.logger.debug(
      `Answered ${mapped.status}${mapped.code ? ` ${mapped.code}` : ''} (${host.getType<string>()}): ${error.name}: ${redactUrls(error.message)}`,
    );
    // The detail of a 503 goes to the log, once per outage; Nest logs nothing.
    if (mapped.status === 503) this.outages.report(error, error.handler ?? 'a request handler');
    switch (host.getType<string>()) {
      case 'http':
        return this.replyHttp(host, mapped);
      case 'graphql':
        return graphqlErrorOf(error, mapped);
      case 'rpc': {
        const { BaseRpcExceptionFilter, RpcException } = loadTransportPackage('@nestjs/microservices', error);
        return new BaseRpcExceptionFilter().catch(new RpcException(payloadOf(mapped)), host);
      }
      case 'ws': {
        const { BaseWsExceptionFilter, WsException } = loadTransportPackage('@nestjs/websockets', error);
        return new BaseWsExceptionFilter().catch(new WsException(payloadOf(mapped)), host);
      }
      default:
        throw error;
    }
  }

  private replyHttp(host: ArgumentsHost, mapped: MappedError): void {
    const adapter = this.adapterHost?.httpAdapter;
    const response = host.switchToHttp().getResponse<unknown>();
    if (!adapter) throw new Error('SerializedExceptionFilter: no HTTP adapter (HttpAdapterHost) to answer with');
    // The response had begun (a stream, a handler that wrote before it lost its lock): nothing more can be said.
    if (adapter.isHeadersSent(response)) return void adapter.end(response);
    if (mapped.retryAfterSeconds !== undefined) adapter.setHeader(response, 'Retry-After', String(mapped.retryAfterSeconds));
    if (!mapped.contentType) return void adapter.reply(response, mapped.body, mapped.status);
    // Serialized here: given an object, an adapter may reset a non-JSON Content-Type of an error body.
    adapter.setHeader(response, 'Content-Type', mapped.contentType);
    adapter.reply(response, JSON.stringify(mapped.body), mapped.status);
  }
}

/** RpcException and WsException send an object as it is; anything else they wrap as `{ status: 'error', message }`. */
function payloadOf(mapped: MappedError): string | object {
  return typeof mapped.body === 'object' && mapped.body !== null ? mapped.body : String(mapped.body ?? mapped.message);
}

function graphqlErrorOf(error: SerializedError, mapped: MappedError): Error {
  const { GraphQLError } = loadTransportPackage('graphql', error);
  const headers = new Map<string, string>();
  if (mapped.retryAfterSeconds !== undefined) headers.set('retry-after', String(mapped.retryAfterSeconds));
  // Returned, not thrown: Nest hands a filter's result to GraphQL as the resolver's, and GraphQL raises an Error result.
  return new GraphQLError(mapped.message, {
    extensions: {
      code: mapped.graphqlCode,
      ...(mapped.code ? { reason: mapped.code } : {}),
      status: mapped.status,
      body: mapped.body,
      http: { status: mapped.status, headers },
    },
  });
}
