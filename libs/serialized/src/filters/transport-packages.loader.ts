/* eslint-disable @typescript-eslint/no-require-imports */
import type { ArgumentsHost } from '@nestjs/common';
import type { Observable } from 'rxjs';

/** What the exception filter uses of each optional transport package. */
interface TransportPackages {
  '@nestjs/microservices': {
    RpcException: new (error: string | object) => Error;
    BaseRpcExceptionFilter: new () => { catch(exception: unknown, host: ArgumentsHost): Observable<unknown> };
  };
  '@nestjs/websockets': {
    WsException: new (error: string | object) => Error;
    BaseWsExceptionFilter: new () => { catch(exception: unknown, host: ArgumentsHost): void };
  };
  graphql: {
    GraphQLError: new (message: string, options: { extensions: Record<string, unknown> }) => Error;
  };
}

/**
 * Loads an optional peer only when a request of its transport fails: an app
 * without microservices, gateways or GraphQL never needs them installed. A
 * context of that transport exists only when the package is there, so a failure
 * to load it leaves the library error to Nest as it is.
 */
export function loadTransportPackage<P extends keyof TransportPackages>(name: P, error: Error): TransportPackages[P] {
  try {
    return require(name) as TransportPackages[P];
  } catch {
    throw error;
  }
}
