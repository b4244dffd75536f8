import type { ParsedSerializationKey } from './serialization-key';
import { keyValueOf, readPath } from './key-value';

/**
 * Reads a key's value for a method called directly (a service method, a BullMQ
 * `process(job)`): a path into the first argument, or into argument N when the
 * first segment is the number N; a function key receives the arguments. The
 * decorator's `transform`, if any, then canonicalizes the value.
 */
export async function resolveArgumentsKey(key: ParsedSerializationKey, args: readonly unknown[], handler: string): Promise<string> {
  if (key.kind === 'function') {
    const value = await (key.fn as (...a: unknown[]) => unknown)(...args);
    return keyValueOf(key, value, ['the value returned by the key function'], handler);
  }
  const indexed = /^\d+$/.test(key.segments[0]);
  const index = indexed ? Number(key.segments[0]) : 0;
  const path = indexed ? key.segments.slice(1) : key.segments;
  const found = readPath({ value: args[index] }, ['value', ...path]);
  return keyValueOf(key, found, [`argument ${index}${path.length ? `.${path.join('.')}` : ''}`], handler);
}
