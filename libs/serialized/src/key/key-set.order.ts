import { SerializationKeyError } from '../errors/serialization-key.error';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

/**
 * The distinct members of a key set, in the order given (a duplicate keeps its first
 * place), checked: at least one, at most `maxKeysPerSet` (16). `keyText` is the key
 * as written (for the 400's message), `lookedIn` where it was read.
 *
 * An empty set is `missing` (SERIALIZATION_KEY_MISSING); more than 16 distinct
 * members `too-many` (SERIALIZATION_KEY_INVALID).
 */
export function distinctKeys(
  keys: readonly string[],
  keyText: string,
  lookedIn: readonly string[],
  handler: string | undefined,
): readonly string[] {
  if (keys.length === 0) throw new SerializationKeyError(keyText, 'missing', lookedIn, handler);
  const distinct = keys.length === 1 ? keys : [...new Set(keys)];
  if (distinct.length > SERIALIZED_DEFAULTS.maxKeysPerSet) throw new SerializationKeyError(keyText, 'too-many', lookedIn, handler);
  return distinct;
}

/**
 * The one order in which every caller takes the keys of a set: by the lock key, in
 * UTF-16 code-unit order (JavaScript's `<` on strings). Every provider puts one
 * `keyPrefix` before every key, which keeps this order; transaction mode uses it
 * too. Two calls over overlapping sets therefore never wait for each other in a
 * cycle (no deadlock), in one process or across processes and drivers.
 */
export function canonicalOrder(keys: readonly string[]): string[] {
  return [...keys].sort(compareKeys);
}

/** `<` on strings as a comparator (not `localeCompare`: the order must not depend on a locale). */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
