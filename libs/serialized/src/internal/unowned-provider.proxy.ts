import type { LockProvider } from '../lock.provider';

/** Nest's shutdown hooks: an app must not run them on a provider it was lent. */
const SHUTDOWN_HOOKS = new Set<PropertyKey>(['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown']);

/**
 * A provider passed to `SerializedModule.forRoot({ provider })`, as Nest sees it:
 * the same object in every way but its shutdown hooks, which Nest would otherwise
 * call on `app.close()` (it calls them on every instance it holds, however it got
 * it). Whoever built the provider closes it, so one provider may serve several apps.
 */
export function unowned<T extends LockProvider>(provider: T): T {
  return new Proxy(provider, {
    get(target, property) {
      if (SHUTDOWN_HOOKS.has(property)) return undefined;
      const value: unknown = Reflect.get(target, property, target);
      // Methods bound to the provider itself: its private fields are not the proxy's.
      // Its class stays itself (`constructor.name` names the driver).
      return typeof value === 'function' && property !== 'constructor' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    has(target, property) {
      return !SHUTDOWN_HOOKS.has(property) && Reflect.has(target, property);
    },
  });
}
