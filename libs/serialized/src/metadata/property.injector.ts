import { Inject } from '@nestjs/common';

/** Our own record of the properties already declared for injection, per class. */
const INJECTED_PROPERTIES_METADATA = 'serialized:injected-properties';

/**
 * Asks Nest to set `property` of every instance of the class of `prototype` to the provider `token`
 * (property injection), once per class however many of its methods are decorated.
 *
 * This is how a decorated method reaches its app's service without any global
 * registry: two apps in one process each inject their own. Which properties were
 * declared is kept under our own metadata key, so Nest's internal metadata is
 * never read.
 */
export function injectPropertyOnce(prototype: object, property: symbol, token: abstract new (...args: never[]) => unknown): void {
  const cls = prototype.constructor;
  const declared = (Reflect.getOwnMetadata(INJECTED_PROPERTIES_METADATA, cls) as ReadonlySet<symbol> | undefined) ?? new Set<symbol>();
  if (declared.has(property)) return;
  Reflect.defineMetadata(INJECTED_PROPERTIES_METADATA, new Set([...declared, property]), cls);
  Inject(token)(prototype, property as unknown as string);
}
