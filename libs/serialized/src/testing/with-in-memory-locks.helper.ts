import { InterceptedCall } from '../metadata/intercepted.call';
import { lockKeyOf, runOptionsOf } from '../metadata/serialized-run-options.mapper';
import type { SerializedMetadata } from '../metadata/serialized-options.interface';
import { LockService } from '../lock.service';
import { InMemoryLockProvider } from '../providers/memory/in-memory-lock.provider';
import { SERIALIZED_LOCK_SERVICE, SERIALIZED_OPTIONS_METADATA } from '../serialized.constants';

/** Options of {@link withInMemoryLocks}. */
export interface WithInMemoryLocksOptions {
  /** The `LockService` to use (share one between instances that must exclude each other); default: a new in-memory one. */
  locks?: LockService;
}

// Metadata that makes a method a request handler of some transport (HTTP, microservices,
// WebSocket gateways, GraphQL resolvers): its key comes from a request a direct call has not got.
const HANDLER_METADATA = ['path', 'microservices:pattern', 'message'];
const isRequestHandler = (method: object): boolean =>
  Reflect.getMetadataKeys(method).some((key) => HANDLER_METADATA.includes(key) || (typeof key === 'string' && key.startsWith('graphql:')));

/**
 * Gives one instance built with `new` (outside Nest's DI) an in-memory `LockService`,
 * so its `@Serialized` methods run, serialized, in a unit test. It is an explicit
 * opt-in per instance: an instance without it (or without Nest) keeps failing closed
 * with "no LockService on this instance", and nothing changes for any other instance.
 *
 * - A decorated service method takes its key from its arguments, as in the app.
 * - A decorated request handler (controller, resolver, gateway, message handler)
 *   called directly has no request to read its key from: each of its calls holds the
 *   handler's whole scope (`<Class>.<method>` or its `scope`) — stricter than in the
 *   app, never looser.
 *
 * Returns `instance`.
 */
export function withInMemoryLocks<T extends object>(instance: T, options: WithInMemoryLocksOptions = {}): T {
  const locks = options.locks ?? new LockService(new InMemoryLockProvider());
  Object.defineProperty(instance, SERIALIZED_LOCK_SERVICE, { value: locks, configurable: true, writable: true });
  for (const [name, method] of decoratedMethods(instance)) {
    if (!isRequestHandler(method)) continue;
    const metadata = Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, method) as SerializedMetadata;
    const handler = `${instance.constructor.name}#${name}`;
    const direct = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const held = await locks.acquire(lockKeyOf(metadata, '*'), runOptionsOf(metadata, handler));
      try {
        // Passing the decorated method through, as the interceptor does, so it does not look for a key.
        return await locks.runHolding(held, () => method.apply(this, args), new InterceptedCall(method));
      } finally {
        await held.release();
      }
    };
    Object.defineProperty(instance, name, { value: direct, configurable: true, writable: true });
  }
  return instance;
}

function* decoratedMethods(instance: object): Generator<[string, (...args: unknown[]) => unknown]> {
  const seen = new Set<string>();
  for (let proto = Object.getPrototypeOf(instance); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value;
      if (typeof value === 'function' && Reflect.hasOwnMetadata(SERIALIZED_OPTIONS_METADATA, value)) yield [name, value];
    }
  }
}
