/**
 * How `@Serialized` names its lock: `<scope>:<value>`, with `%` and `:` inside
 * either part written `%25` and `%3A`. The composition is then one-to-one: scope
 * `A` with value `B:C` (`A:B%3AC`) and scope `A:B` with value `C` (`A%3AB:C`)
 * are two locks, and a part with neither character is written as it is, so
 * `lockService.run('wallet:42', …)` still takes the lock of
 * `@Serialized('id', { scope: 'wallet' })` for id 42. Keys given to
 * `LockService.run` and to providers are used as given.
 */
export function composeLockKey(scope: string, value: string): string {
  return `${escapeLockKeyPart(scope)}:${escapeLockKeyPart(value)}`;
}

/** `%` → `%25`, `:` → `%3A`; a part without them comes back unchanged (and unallocated). */
export function escapeLockKeyPart(part: string): string {
  if (!part.includes(':') && !part.includes('%')) return part;
  return part.replace(/[%:]/g, (c) => (c === '%' ? '%25' : '%3A'));
}

// In a /u pattern a surrogate pair is one code point, so only a lone surrogate is in category Cs.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether `text` has a lone surrogate (`\ud800`, `\udc00`): UTF-8 cannot encode
 * one, so Redis and PostgreSQL would see U+FFFD instead, and `'\ud800'`,
 * `'\udc00'` and `'\ufffd'` would be one lock there but three in memory.
 */
export function hasLoneSurrogate(text: string): boolean {
  // Checked on every acquisition: the native check (Node 20+) costs a fraction of the /u regex.
  return isWellFormed ? !isWellFormed.call(text) : LONE_SURROGATE.test(text);
}

/** `String.prototype.isWellFormed` (ES2024), typed here since the library's lib setting is ES2022. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
