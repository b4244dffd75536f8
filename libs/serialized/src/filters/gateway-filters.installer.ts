import { Inject, Injectable, type OnApplicationShutdown, type Type } from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA } from '@nestjs/common/constants';
import { DiscoveryService } from '@nestjs/core';
import { SERIALIZED_OPTIONS } from '../serialized.constants';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';
import { SerializedExceptionFilter } from './serialized-exception.filter';

/** `@WebSocketGateway()`'s class metadata (the literal: `@nestjs/websockets` is an optional peer). */
const GATEWAY_METADATA = 'websockets:is_gateway';

/**
 * Gives every WebSocket gateway of the app the library's exception filter.
 *
 * Nest applies no global enhancer to gateways (their filter context has no global
 * filters), so `APP_FILTER` never reaches them; a class-level filter does. The
 * filter is appended to each gateway's own filters — tried before them, catching
 * only library errors — while the app builds (before `init()` connects gateways),
 * and taken off again at shutdown. Class metadata is shared by every app of the
 * process: while two apps that use one gateway class run at once, the first
 * one's filter (and `errorMapping` hook) answers for both.
 */
@Injectable()
export class GatewayFiltersInstaller implements OnApplicationShutdown {
  private readonly gateways: Type[] = [];

  constructor(
    discovery: DiscoveryService,
    @Inject(SERIALIZED_OPTIONS) options: ResolvedSerializedOptions,
    private readonly filter: SerializedExceptionFilter,
  ) {
    if (options.errorMapping === false) return;
    for (const wrapper of discovery.getProviders()) {
      const gateway = wrapper.metatype as Type | null | undefined;
      if (typeof gateway !== 'function' || !Reflect.getMetadata(GATEWAY_METADATA, gateway) || this.gateways.includes(gateway)) continue;
      const filters: unknown[] = Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, gateway) ?? [];
      if (filters.some((f) => f instanceof SerializedExceptionFilter)) continue;
      Reflect.defineMetadata(EXCEPTION_FILTERS_METADATA, [...filters, filter], gateway);
      this.gateways.push(gateway);
    }
  }

  onApplicationShutdown(): void {
    for (const gateway of this.gateways.splice(0)) {
      const filters: unknown[] = Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, gateway) ?? [];
      Reflect.defineMetadata(
        EXCEPTION_FILTERS_METADATA,
        filters.filter((f) => f !== this.filter),
        gateway,
      );
    }
  }
}
