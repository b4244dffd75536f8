/**
 * Puts `wrapper` in `descriptor` in place of `original`, so that other decorators
 * keep working: the wrapper takes the method's name and every metadata entry that
 * decorators applied before this one (written below it: Swagger, guards, a schedule)
 * put on the original, then `metadataKey` → `metadata` of its own.
 */
export function wrapMethod(
  descriptor: PropertyDescriptor,
  original: (...args: never[]) => unknown,
  wrapper: (...args: never[]) => unknown,
  metadataKey: string | symbol,
  metadata: unknown,
): void {
  Object.defineProperty(wrapper, 'name', { value: original.name });
  for (const key of Reflect.getMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, original), wrapper);
  }
  Reflect.defineMetadata(metadataKey, metadata, wrapper);
  descriptor.value = wrapper;
}
