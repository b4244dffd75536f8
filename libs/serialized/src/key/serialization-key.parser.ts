import type { ExecutionContext } from '@nestjs/common';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';

const MAX_KEYS_PER_SET = SERIALIZED_DEFAULTS.maxKeysPerSet;

/** Value a key function may return; `undefined`, `null` and `''` mean "missing" (400). */
export type SerializationKeyValue = string | number | bigint | null | undefined;

/**
 * A function key. On a route handler (through the interceptor) it receives the
 * `ExecutionContext`; on any other method it receives the method's arguments.
 */
export type SerializationKeyFn =
  | ((context: ExecutionContext) => SerializationKeyValue | Promise<SerializationKeyValue>)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  | ((...args: any[]) => SerializationKeyValue | Promise<SerializationKeyValue>);

/**
 * What a handler is serialized on:
 * - a name (`'userId'`): route params, then `req.user`, then body, then query;
 * - a path with its source (`'params.userId'`, `'user.id'`, `'body.accountId'`,
 *   `'query.tenant'`, `'headers.idempotency-key'`);
 * - on a method that is not a route handler, a path into its first argument
 *   (`'data.userId'` → `job.data.userId`) or, when the first segment is a number,
 *   into that argument (`'1.userId'`; `'0'` is the first argument itself);
 * - or a function.
 */
export type SerializationKey = string | SerializationKeyFn;

/**
 * A key function that names a key set: it may return an array of values (each
 * checked as a key value; duplicates collapse; an empty array is a 400 "missing",
 * more than 16 distinct values a 400 "invalid") or a single value.
 */
export type SerializationKeysFn =
  | ((
      context: ExecutionContext,
    ) => SerializationKeyValue | readonly SerializationKeyValue[] | Promise<SerializationKeyValue | readonly SerializationKeyValue[]>)
  | ((
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      ...args: any[]
    ) => SerializationKeyValue | readonly SerializationKeyValue[] | Promise<SerializationKeyValue | readonly SerializationKeyValue[]>);

/**
 * What `@Serialized` accepts: one key ({@link SerializationKey}), several at once
 * (`['params.fromId', 'params.toId']`: every key held together, in one canonical
 * order, all or none), or a key function returning an array
 * ({@link SerializationKeysFn}). See docs/semantics.md, "Several keys at once".
 */
export type SerializedKey = SerializationKey | SerializationKeysFn | readonly SerializationKey[];

/** The request sources a path may name. */
export const REQUEST_SOURCES = ['params', 'user', 'body', 'query', 'headers'] as const;
export type RequestSource = (typeof REQUEST_SOURCES)[number];
/** Where a bare name is looked for, in order. */
export const NAME_LOOKUP_ORDER: readonly RequestSource[] = ['params', 'user', 'body', 'query'];

/**
 * Canonicalizes a key's value before it names a lock (`@Serialized(key, { transform })`):
 * it receives the value found, as text, and returns the value to lock on. `Number`
 * makes `'042'` and `'42'` one lock; `(v) => v.toLowerCase()` makes e-mail
 * addresses case-insensitive. Returning `undefined`, `null`, `''`, `NaN` or
 * anything else that is not a usable key is a 400, as for a missing key.
 */
export type SerializationKeyTransform = (value: string) => SerializationKeyValue | Promise<SerializationKeyValue>;

/** A key as checked once, when the decorator is applied. */
export type ParsedSerializationKey = (
  { kind: 'function'; text: string; fn: SerializationKeyFn } | { kind: 'path'; text: string; segments: readonly string[] }
) & { transform?: SerializationKeyTransform };

/** A key set as checked once, when the decorator is applied: its members, each a key of its own. */
export interface ParsedKeySet {
  readonly kind: 'set';
  /** As written, for messages: `[params.fromId, params.toId]`. */
  readonly text: string;
  readonly members: readonly ParsedSerializationKey[];
}

/** What `@Serialized` records: one key, or a key set. */
export type ParsedSerializedKey = ParsedSerializationKey | ParsedKeySet;

/**
 * `@Serialized`'s key checked (see {@link parseSerializationKey}): an array is a key
 * set of 1 to 16 keys, each checked on its own; a function may return an array at
 * run time (see {@link SerializationKeysFn}).
 */
export function parseSerializedKey(key: SerializedKey, where: string, transform?: SerializationKeyTransform): ParsedSerializedKey {
  if (!Array.isArray(key)) return parseSerializationKey(key as SerializationKey, where, transform);
  const members = key as readonly SerializationKey[];
  if (members.length === 0) throw new TypeError(`@Serialized on ${where}: an array key names at least one key, got []`);
  if (members.length > MAX_KEYS_PER_SET)
    throw new TypeError(`@Serialized on ${where}: an array key names at most ${MAX_KEYS_PER_SET} keys, got ${members.length}`);
  const parsed = members.map((member) => parseSerializationKey(member, where, transform));
  return { kind: 'set', text: `[${parsed.map((member) => member.text).join(', ')}]`, members: parsed };
}

/** Checks the key's form; a malformed key is a programming error, thrown at decoration time. */
export function parseSerializationKey(key: SerializationKey, where: string, transform?: SerializationKeyTransform): ParsedSerializationKey {
  if (typeof key === 'function') return { kind: 'function', text: `function ${key.name || '(anonymous)'}`, fn: key, transform };
  if (typeof key !== 'string' || key.trim() === '') {
    throw new TypeError(`@Serialized on ${where}: the key must be a non-empty string or a function, got ${JSON.stringify(key)}`);
  }
  const segments = key.split('.');
  if (segments.some((s) => s === '')) {
    throw new TypeError(`@Serialized on ${where}: the key "${key}" has an empty path segment`);
  }
  return { kind: 'path', text: key, segments, transform };
}
