import { UseInterceptors } from '@nestjs/common';
import { parseSerializationKey } from '../key/serialization-key.parser';
import { injectPropertyOnce } from '../metadata/property.injector';
import { IDEMPOTENCY_SERVICE, IDEMPOTENT_METADATA } from './idempotency.constants';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { runIdempotentMethod } from './idempotent-method.runner';
import type { IdempotentMetadata, IdempotentOptions } from './idempotent-options.interface';
import { assertIdempotentOptions } from './idempotent-options.validator';
import { wrapMethod } from '../metadata/method.wrapper';

/**
 * Duplicates get the first request's response (the IETF `Idempotency-Key` header).
 *
 * ```ts
 * @Post('payments')
 * @Idempotent({ scope: 'user.id' })
 * pay(@Body() body: PaymentDto) { ... }
 * ```
 *
 * The first request with a key runs the handler under the key's lock; its
 * response (status, body, describing headers) is stored in the active backend for
 * `ttlMs`. A duplicate that arrives meanwhile waits in the key's queue, then gets
 * that response; a later one gets it at once; both carry `Idempotent-Replayed: true`.
 * `mode: 'reject'`: 409 while the first runs. The same key with a different
 * request: 422. `required` and no key: 400. 5xx responses and lock errors are not
 * stored (the next attempt runs the handler) unless `storeServerErrors`.
 *
 * On an RPC handler, or a method that is not a route handler (a BullMQ
 * `process(job)`), give the key from the payload (`{ key: 'data.paymentId' }`):
 * the stored "response" is the return value. See docs/idempotency.md.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  assertIdempotentOptions(options);
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (!descriptor || propertyKey === undefined || typeof descriptor.value !== 'function') {
      throw new TypeError('@Idempotent applies to a method (a route handler, an RPC handler or a method such as a BullMQ process(job))');
    }
    const className = target.constructor.name;
    const handler = `${className}#${String(propertyKey)}`;
    const metadata: IdempotentMetadata = {
      options,
      key: parseSerializationKey(options.key ?? `headers.${IDEMPOTENCY_DEFAULTS.header}`, handler),
      scope: options.scope === undefined ? undefined : parseSerializationKey(options.scope, handler),
      defaultKey: options.key === undefined,
      route: `${className}.${String(propertyKey)}`,
      handler,
      storedHeaders: [...new Set([...IDEMPOTENCY_DEFAULTS.storedHeaders, ...(options.headers ?? []).map((h) => h.toLowerCase())])],
    };
    const original = descriptor.value as (...args: unknown[]) => unknown;
    const idempotent = async function (this: Record<symbol, IdempotencyService | undefined>, ...args: unknown[]): Promise<unknown> {
      const service = this?.[IDEMPOTENCY_SERVICE];
      if (!service) {
        throw new Error(
          `@Idempotent on ${handler}: no IdempotencyService on this instance. Import SerializedModule.forRoot() in the app module and let Nest create ${className}.`,
        );
      }
      // Called by Nest under IdempotencyInterceptor, which handles the call (metadata/intercepted.call.ts).
      if (service.interceptedCall()?.claim(idempotent)) return original.apply(this, args);
      return runIdempotentMethod(service, metadata, this, original, args);
    };
    wrapMethod(descriptor, original, idempotent, IDEMPOTENT_METADATA, metadata);
    injectPropertyOnce(target, IDEMPOTENCY_SERVICE, IdempotencyService);
    UseInterceptors(IdempotencyInterceptor)(target, propertyKey, descriptor);
    return descriptor;
  }) as MethodDecorator;
}
