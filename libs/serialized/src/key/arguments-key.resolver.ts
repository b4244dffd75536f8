import type { ParsedSerializationKey, ParsedSerializedKey } from './serialization-key.parser';
import { keySetValuesOf, keyValueOf, readPath } from './key-value.reader';
import { distinctKeys } from './key-set.order';

/**
 * Reads a key's value for a method called directly (a service method, a BullMQ
 * `process(job)`): a path into the first argument, or into argument N when the
 * first segment is the number N; a function key receives the arguments. The
 * decorator's `transform`, if any, then canonicalizes the value.
 */
export async function resolveArgumentsKey(key: ParsedSerializedKey, args: readonly unknown[], handler: string): Promise<string> {
  // BullMQ's per-key job order and @Idempotent name one key each.
  if (key.kind === 'set') throw new TypeError(`${key.text} on ${handler}: a key set is not supported here (one key only)`);
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

/**
 * {@link resolveArgumentsKey} for `@Serialized` on a method: also a key set (an
 * array key, or a key function returning an array) — its values, distinct, in
 * the order found.
 */
export async function resolveArgumentsKeys(
  key: ParsedSerializedKey,
  args: readonly unknown[],
  handler: string,
): Promise<string | readonly string[]> {
  if (key.kind === 'set') {
    const values = await Promise.all(key.members.map((member) => resolveArgumentsKeys(member, args, handler)));
    return distinctKeys(values.flat(), key.text, [], handler);
  }
  if (key.kind === 'function') {
    const value = await (key.fn as (...a: unknown[]) => unknown)(...args);
    const lookedIn = ['the value returned by the key function'];
    return Array.isArray(value) ? keySetValuesOf(key, [{ key, value, lookedIn }], handler) : keyValueOf(key, value, lookedIn, handler);
  }
  return resolveArgumentsKey(key as ParsedSerializationKey, args, handler);
}
