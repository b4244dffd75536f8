import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { SerializedConfigError } from '../config/serialized-config.error';
import { IdempotencyService } from './idempotency.service';
import { IdempotentMetadataAccessor } from './idempotent-metadata.accessor';

/**
 * Refuses, when the app starts, `@Idempotent` handlers whose response cannot be
 * stored and replayed: a handler that takes the response (`@Res()` / `@Response()`
 * without `passthrough: true`, or `@Next()`) writes it past Nest, an `@Sse()` route
 * and a handler declared to return a `StreamableFile` stream it. Also refuses
 * `@Idempotent` on a backend that cannot keep records. One error lists them all.
 */
@Injectable()
export class IdempotentRoutesChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly metadata: IdempotentMetadataAccessor,
    private readonly service: IdempotencyService,
  ) {}

  onModuleInit(): void {
    const problems: string[] = [];
    let decorated = 0;
    const controllers = new Set(this.discovery.getControllers().map((wrapper) => wrapper.metatype));
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | undefined;
      if (typeof type !== 'function' || !type.prototype) continue;
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        const metadata = typeof handler === 'function' ? this.metadata.get(handler) : undefined;
        if (!metadata) continue;
        decorated++;
        if (!controllers.has(wrapper.metatype)) continue;
        const why = this.unreplayable(type, name, handler as object);
        if (why)
          problems.push(
            `@Idempotent on ${type.name}#${name}: ${why}, which cannot be stored and replayed; remove @Idempotent, or return the response from the handler instead`,
          );
      }
    }
    if (decorated > 0) {
      try {
        void this.service.store;
      } catch (error) {
        problems.push((error as Error).message);
      }
    }
    if (problems.length) throw new SerializedConfigError(problems);
  }

  private unreplayable(type: abstract new (...args: never[]) => unknown, name: string, handler: object): string | undefined {
    const [parameter] = this.metadata.responseParameters(type, name);
    if (parameter) return `the handler takes ${parameter.decorator} (parameter ${parameter.index}) and writes the response itself`;
    if (this.metadata.isSse(handler)) return 'an @Sse() route streams its response';
    if (this.metadata.returnsStream(type.prototype as object, name)) return 'the handler returns a StreamableFile (a stream)';
    return undefined;
  }
}
