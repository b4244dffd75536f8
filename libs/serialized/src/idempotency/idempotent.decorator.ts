import { UseInterceptors } from '@nestjs/common';
import { parseSerializationKey, type SerializationKey } from '../key/serialization-key';
import { injectPropertyOnce } from '../metadata/property-injection';
import { IDEMPOTENCY_SERVICE, IDEMPOTENT_METADATA } from './idempotency.constants';
import { IDEMPOTENCY_DEFAULTS, IDEMPOTENCY_LIMITS } from './idempotency.defaults';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { runIdempotentMethod } from './idempotent-method.runner';
import type { IdempotentMetadata, IdempotentOptions } from './idempotent-options.interface';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

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
  validateOptions(options);
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
      // Called by Nest under IdempotencyInterceptor, which handles the call (metadata/handler.handshake.ts).
      if (service.handshake()?.claim(idempotent)) return original.apply(this, args);
      return runIdempotentMethod(service, metadata, this, original, args);
    };
    Object.defineProperty(idempotent, 'name', { value: original.name });
    // Decorators applied before this one (written below it) put their metadata on the original.
    for (const metadataKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metadataKey, Reflect.getMetadata(metadataKey, original), idempotent);
    }
    Reflect.defineMetadata(IDEMPOTENT_METADATA, metadata, idempotent);
    descriptor.value = idempotent;
    injectPropertyOnce(target, IDEMPOTENCY_SERVICE, IdempotencyService);
    UseInterceptors(IdempotencyInterceptor)(target, propertyKey, descriptor);
    return descriptor;
  }) as MethodDecorator;
}

function validateOptions(options: IdempotentOptions): void {
  const problems: string[] = [];
  const { mode, waitTimeoutMs, ttlMs, maxResponseBytes, required, storeServerErrors, fingerprint, headers } = options;
  if (mode !== undefined && mode !== 'wait' && mode !== 'reject') problems.push(`mode must be 'wait' or 'reject', got ${JSON.stringify(mode)}`);
  if (waitTimeoutMs !== undefined && (!Number.isInteger(waitTimeoutMs) || waitTimeoutMs < 0)) {
    problems.push(`waitTimeoutMs must be an integer >= 0, got ${JSON.stringify(waitTimeoutMs)}`);
  }
  for (const [name, value] of [['ttlMs', ttlMs], ['maxResponseBytes', maxResponseBytes]] as const) {
    const { min, max } = IDEMPOTENCY_LIMITS[name];
    if (value !== undefined && (!Number.isInteger(value) || value < min || value > max)) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
  }
  for (const [name, value] of [['required', required], ['storeServerErrors', storeServerErrors]] as const) {
    if (value !== undefined && typeof value !== 'boolean') problems.push(`${name} must be a boolean, got ${JSON.stringify(value)}`);
  }
  if (fingerprint !== undefined && fingerprint !== false && typeof fingerprint !== 'function') {
    problems.push('fingerprint must be a function or false');
  }
  if (headers !== undefined && (!Array.isArray(headers) || !headers.every((h) => typeof h === 'string' && HEADER_NAME.test(h)))) {
    problems.push(`headers must be an array of header names, got ${JSON.stringify(headers)}`);
  }
  for (const [name, value] of [['key', options.key], ['scope', options.scope]] as const) {
    if (value !== undefined && !isKeyForm(value)) {
      problems.push(`${name} must be a non-empty string (a name or a dotted path) or a function, got ${JSON.stringify(value)}`);
    }
  }
  if (problems.length) throw new TypeError(`@Idempotent: ${problems.join('; ')}`);
}

function isKeyForm(value: SerializationKey): boolean {
  if (typeof value === 'function') return true;
  return typeof value === 'string' && value.trim() !== '' && !value.split('.').some((segment) => segment === '');
}
