import { SerializationKeyError } from '../errors';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';
import { hasLoneSurrogate } from './lock-key';

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
