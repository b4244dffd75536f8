import { UseInterceptors } from '@nestjs/common';
import { isBullmqJob, runSerializedJob } from '../bullmq/serialized-job.dispatch';
import { resolveArgumentsKeys } from '../key/arguments-key.resolver';
import { parseSerializedKey, type SerializedKey } from '../key/serialization-key.parser';
import { LockService } from '../lock.service';
import { SERIALIZED_LOCK_SERVICE, SERIALIZED_OPTIONS_METADATA, SKIP_SERIALIZED_METADATA } from '../serialized.constants';
import { SerializedInterceptor } from '../interceptors/serialized.interceptor';
import { injectPropertyOnce } from '../metadata/property.injector';
import { lockKeyOf, runOptionsOf } from '../metadata/serialized-run-options.mapper';
import type { SerializedMetadata, SerializedOptions } from '../metadata/serialized-options.interface';
import { assertSerializedOptions } from './serialized-options.validator';
import { wrapMethod } from '../metadata/method.wrapper';

/**
 * Serializes calls per key: one at a time, in arrival order.
 *
 * ```ts
 * @Post('users/:userId/rewards')
 * @Serialized('userId')
 * claimDailyReward(@Param('userId') userId: string) { ... }
 * ```
 *
 * On a route handler (HTTP, RPC, WebSocket, GraphQL) the `SerializedInterceptor`
 * reads the key from the request and holds the lock until the handler's promise
 * settles or its Observable completes, errors or is unsubscribed. On a class, it
 * applies to every route handler of that controller but those marked
 * `@SkipSerialized()`. The handler reaches its lock through `@SerializedLock()`.
 *
 * On any other provider method (a service, a BullMQ `WorkerHost.process(job)`)
 * the method itself is wrapped: the key is read from its arguments and the method
 * then returns a Promise. Metadata other decorators put on the method is kept.
 *
 * The lock key is `<keyPrefix>:<scope>:<value>`; `scope` defaults to `<Class>.<method>`.
 * Options are checked when the decorator is applied: a bad one is a start-up error
 * naming it and `Class#method`.
 *
 * Several keys at once: an array key (or a key function returning an array) holds
 * every key together, taken in one canonical order so that overlapping sets never
 * deadlock, all or none, within one `waitTimeoutMs`; `@SerializedLock()` then gives
 * the `readonly Lock[]` in the order of the keys (docs/semantics.md, "Several keys at once").
 *
 * ```ts
 * @Post('transfers/:fromId/:toId')
 * @Serialized(['params.fromId', 'params.toId'], { scope: 'account' })
 * transfer(@Param('fromId') fromId: string, @Param('toId') toId: string) { ... }
 * ```
 */
export function Serialized(key: SerializedKey, options: SerializedOptions = {}): MethodDecorator & ClassDecorator {
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) return decorateMethod(target, propertyKey!, descriptor, key, options);
    const cls = target as { name: string };
    assertSerializedOptions(options, cls.name);
    const metadata: SerializedMetadata = {
      key,
      parsedKey: parseSerializedKey(key, cls.name, options.transform),
      options,
      defaultScope: cls.name,
    };
    Reflect.defineMetadata(SERIALIZED_OPTIONS_METADATA, metadata, target);
    UseInterceptors(SerializedInterceptor)(target as never);
  }) as MethodDecorator & ClassDecorator;
}

function decorateMethod(
  target: object,
  propertyKey: string | symbol,
  descriptor: PropertyDescriptor,
  key: SerializedKey,
  options: SerializedOptions,
): PropertyDescriptor {
  const original = descriptor.value as (...args: unknown[]) => unknown;
  const className = target.constructor.name;
  const handler = `${className}#${String(propertyKey)}`;
  if (typeof original !== 'function') throw new TypeError(`@Serialized on ${handler}: only methods can be serialized`);
  if (Reflect.getMetadata(SKIP_SERIALIZED_METADATA, original)) {
    throw new TypeError(`@Serialized on ${handler}: the method is also @SkipSerialized(); remove one of the two`);
  }
  assertSerializedOptions(options, handler);

  const metadata: SerializedMetadata = {
    key,
    parsedKey: parseSerializedKey(key, handler, options.transform),
    options,
    defaultScope: `${className}.${String(propertyKey)}`,
  };

  const direct = async (instance: object, lockService: LockService, args: unknown[]): Promise<unknown> => {
    // A BullMQ job never waits for its key inside a worker slot: it is parked instead (docs/bullmq.md).
    if (isBullmqJob(args[0]))
      return runSerializedJob({ lockService, metadata, handler, instance, method: original, decorated: serialized, args });
    const value = await resolveArgumentsKeys(metadata.parsedKey, args, handler);
    const section = () => original.apply(instance, args);
    if (typeof value === 'string') return lockService.run(lockKeyOf(metadata, value), section, runOptionsOf(metadata, handler));
    return lockService.run(
      value.map((one) => lockKeyOf(metadata, one)),
      section,
      runOptionsOf(metadata, handler),
    );
  };
  // Not async itself: the call Nest makes under the interceptor returns what the method returns,
  // with no promise of its own added (every request pays for one); every other call gets a Promise.
  const serialized = function (this: Record<symbol, LockService | undefined>, ...args: unknown[]): unknown {
    const lockService = this?.[SERIALIZED_LOCK_SERVICE];
    if (!lockService) {
      return Promise.reject(
        new Error(
          `@Serialized on ${handler}: no LockService on this instance. Import SerializedModule.forRoot() in the app module and let Nest create ${className}.`,
        ),
      );
    }
    // Called by Nest under SerializedInterceptor, which holds the key already (metadata/intercepted.call.ts).
    if (lockService.interceptedCall()?.claim(serialized)) return original.apply(this, args);
    return direct(this, lockService, args);
  };
  wrapMethod(descriptor, original, serialized, SERIALIZED_OPTIONS_METADATA, metadata);

  // Nest sets this property when it creates the instance: no global registry, so
  // two apps in one process each use their own LockService.
  injectPropertyOnce(target, SERIALIZED_LOCK_SERVICE, LockService);
  UseInterceptors(SerializedInterceptor)(target, propertyKey, descriptor);
  return descriptor;
}
