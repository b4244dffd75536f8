import { Injectable, RequestMethod, StreamableFile } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA, SSE_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { Reflector } from '@nestjs/core';
import { IDEMPOTENT_METADATA } from './idempotency.constants';
import type { IdempotentMetadata } from './idempotent-options.interface';

/** A parameter of a route handler that hands it the response (or `next`), so it writes the response itself. */
export interface ResponseParameter {
  readonly index: number;
  readonly decorator: '@Res()/@Response()' | '@Next()';
}

/** Every metadata read of `@Idempotent`, in one place. */
@Injectable()
export class IdempotentMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The handler's `@Idempotent`, or `undefined`. */
  get(handler: object): IdempotentMetadata | undefined {
    return this.reflector.get<IdempotentMetadata | undefined>(IDEMPOTENT_METADATA, handler as never);
  }

  /** Whether `handler` is an HTTP route (`@Get()`, `@Post()`, ...). */
  isRoute(handler: object): boolean {
    return (
      this.reflector.get(PATH_METADATA, handler as never) !== undefined &&
      this.reflector.get<RequestMethod>(METHOD_METADATA, handler as never) !== undefined
    );
  }

  /** Whether `handler` is a server-sent events route (`@Sse()`). */
  isSse(handler: object): boolean {
    return this.reflector.get(SSE_METADATA, handler as never) === true;
  }

  /**
   * Parameters that take the response without `{ passthrough: true }`, or `next`:
   * such a handler writes the response itself, past what Nest sends (Nest's own
   * route-argument metadata, `@Res()`, `@Response()`, `@Next()`).
   */
  responseParameters(cls: object, method: string | symbol): ResponseParameter[] {
    const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, cls, method) ?? {}) as Record<string, { index: number }>;
    const passthrough = Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, cls, method) === true;
    const found: ResponseParameter[] = [];
    for (const [key, arg] of Object.entries(args)) {
      const type = Number(key.split(':')[0]);
      if (type === RouteParamtypes.RESPONSE && !passthrough) {
        found.push({ index: arg.index, decorator: '@Res()/@Response()' });
      } else if (type === RouteParamtypes.NEXT) {
        found.push({ index: arg.index, decorator: '@Next()' });
      }
    }
    return found.sort((a, b) => a.index - b.index);
  }

  /** Whether the method is declared to return a `StreamableFile` (TypeScript's `design:returntype`). */
  returnsStream(prototype: object, method: string | symbol): boolean {
    const type = Reflect.getMetadata('design:returntype', prototype, method) as unknown;
    return typeof type === 'function' && (type === StreamableFile || type.prototype instanceof StreamableFile);
  }
}
