import { SerializationKeyError } from '../errors';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';
import { hasLoneSurrogate } from './lock-key.composer';
import { distinctKeys } from './key-set.order';
import type { ParsedSerializationKey } from './serialization-key.parser';

/**
 * Turns what a key lookup found into the key's value, or throws the 400-class
 * `SerializationKeyError`: missing (`undefined`, `null`, `''`), not a scalar,
 * longer than `maxKeyLength`, only white space, or with a lone surrogate (which
 * the backends would store as U+FFFD, merging distinct values into one lock).
 */
export function toKeyValue(found: unknown, keyText: string, lookedIn: readonly string[], handler: string): string {
  if (found === undefined || found === null || found === '') {
    throw new SerializationKeyError(keyText, 'missing', lookedIn, handler);
  }
  let value: string;
  if (typeof found === 'string') value = found;
  else if ((typeof found === 'number' && Number.isFinite(found)) || typeof found === 'bigint') value = String(found);
  else throw new SerializationKeyError(keyText, 'not-scalar', lookedIn, handler);
  if (value.length > SERIALIZED_DEFAULTS.maxKeyLength) {
    throw new SerializationKeyError(keyText, 'too-long', lookedIn, handler);
  }
  if (hasLoneSurrogate(value)) throw new SerializationKeyError(keyText, 'unencodable', lookedIn, handler);
  if (value.trim() === '') throw new SerializationKeyError(keyText, 'blank', lookedIn, handler);
  return value;
}

/**
 * The key's value from what a lookup found: checked, then passed through the
 * decorator's `transform` (when there is one) and checked again, so a transform
 * that yields nothing usable (`Number('abc')` is `NaN`) is a 400 too.
 */
export function keyValueOf(
  key: ParsedSerializationKey,
  found: unknown,
  lookedIn: readonly string[],
  handler: string,
): string | Promise<string> {
  const value = toKeyValue(found, key.text, lookedIn, handler);
  if (!key.transform) return value;
  const where = [`transform(${lookedIn[lookedIn.length - 1] ?? key.text})`];
  const transformed = key.transform(value);
  return transformed instanceof Promise
    ? transformed.then((result) => toKeyValue(result, key.text, where, handler))
    : toKeyValue(transformed, key.text, where, handler);
}

/**
 * Follows `segments` into `root`. Getters of class instances (a `User` entity on
 * `req.user`) are read; what every object inherits (`constructor`, `__proto__`,
 * `toString`) is not.
 */
export function readPath(root: unknown, segments: readonly string[]): unknown {
  let current = root;
  for (const segment of segments) {
    if (current === null || typeof current !== 'object') return undefined;
    if (segment in Object.prototype && !Object.prototype.hasOwnProperty.call(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/**
 * The values of a key set from what its lookups found (each a value or, for a key
 * function, possibly an array of them): each checked (and transformed) as
 * {@link keyValueOf} does, duplicates collapsed, 1 to 16 distinct ones. Synchronous
 * unless a `transform` is async.
 */
export function keySetValuesOf(
  key: { readonly text: string },
  found: readonly { readonly key: ParsedSerializationKey; readonly value: unknown; readonly lookedIn: readonly string[] }[],
  handler: string,
): readonly string[] | Promise<readonly string[]> {
  const values: (string | Promise<string>)[] = [];
  let async = false;
  for (const each of found) {
    const many = Array.isArray(each.value) ? (each.value as readonly unknown[]) : [each.value];
    // An empty array from a key function: the set names no key.
    if (many.length === 0) throw new SerializationKeyError(each.key.text, 'missing', each.lookedIn, handler);
    for (const one of many) {
      const value = keyValueOf(each.key, one, each.lookedIn, handler);
      if (typeof value !== 'string') async = true;
      values.push(value);
    }
  }
  const lookedIn = found.flatMap((each) => each.lookedIn);
  if (!async) return distinctKeys(values as string[], key.text, lookedIn, handler);
  return Promise.all(values).then((resolved) => distinctKeys(resolved, key.text, lookedIn, handler));
}
