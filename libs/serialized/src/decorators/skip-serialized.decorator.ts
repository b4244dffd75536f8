import { SERIALIZED_OPTIONS_METADATA, SKIP_SERIALIZED_METADATA } from '../serialized.constants';

/**
 * Exempts a route handler from its class's `@Serialized`: it runs without taking
 * the lock, e.g. a read next to serialized writes.
 *
 * ```ts
 * @Controller('users/:userId/resources')
 * @Serialized('userId')
 * export class ResourcesController {
 *   @Post() create() { ... }          // serialized per userId
 *   @Get() @SkipSerialized() list() { ... } // not serialized
 * }
 * ```
 *
 * `@Serialized` on the method itself and `@SkipSerialized()` contradict each
 * other: applying both is a start-up error.
 */
export function SkipSerialized(): MethodDecorator {
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const handler = `${target.constructor.name}#${String(propertyKey)}`;
    if (typeof descriptor?.value !== 'function') throw new TypeError(`@SkipSerialized on ${handler}: only methods can be exempted`);
    if (Reflect.getMetadata(SERIALIZED_OPTIONS_METADATA, descriptor.value)) {
      throw new TypeError(`@SkipSerialized on ${handler}: the method is @Serialized itself; remove one of the two`);
    }
    Reflect.defineMetadata(SKIP_SERIALIZED_METADATA, true, descriptor.value);
    return descriptor;
  };
}
