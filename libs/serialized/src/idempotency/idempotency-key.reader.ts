import type { ExecutionContext } from '@nestjs/common';
import { SerializationKeyError } from '../errors';
import { resolveArgumentsKey } from '../key/arguments-key.resolver';
import { resolveContextKey } from '../key/context-key.resolver';
import type { ParsedSerializationKey } from '../key/serialization-key.parser';
import { SERIALIZED_DEFAULTS } from '../serialized.defaults';
import { IdempotencyKeyError } from './errors';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import type { IdempotentMetadata } from './idempotent-options.interface';
import { argumentsFingerprint, contextFingerprint, digest } from './request.fingerprint';

/** One request (or call) that `@Idempotent` handles. */
export interface IdempotentCall {
  /**
   * The lock key and the record's key: `idempotent:<Class>.<method>:<digest>`,
   * the digest covering the scope's value and the idempotency key. Neither value
   * appears in clear in the backend.
   */
  readonly key: string;
  /** The request's fingerprint; `undefined` when `fingerprint: false`. */
  readonly fingerprint: string | undefined;
}

/** Where a call's key is read from: a handler's execution context, or a method's arguments. */
export type CallSource = { ctx: ExecutionContext } | { args: readonly unknown[]; isJob: boolean };

/**
 * Reads the idempotency key (and the scope) of a call and computes its fingerprint.
 * Resolves `undefined` when the key is absent and not `required`: the call then
 * runs without idempotency.
 *
 * @throws IdempotencyKeyError (400) for a missing required, empty, over-long or malformed key, or a missing scope
 */
export async function readIdempotentCall(metadata: IdempotentMetadata, source: CallSource): Promise<IdempotentCall | undefined> {
  const value = await readKey(metadata, source);
  if (value === undefined) return undefined;
  const scope = metadata.scope && (await readScope(metadata, metadata.scope, source));
  return {
    key: `idempotent:${metadata.route}:${digest(JSON.stringify([scope ?? null, value]))}`,
    fingerprint: await fingerprintOf(metadata, source),
  };
}

async function readKey(metadata: IdempotentMetadata, source: CallSource): Promise<string | undefined> {
  const { handler } = metadata;
  if (metadata.defaultKey) {
    if ('ctx' in source && source.ctx.getType() === 'http') return readHeader(metadata, source.ctx);
    throw new TypeError(
      `@Idempotent on ${handler}: only an HTTP handler has an Idempotency-Key header; give the key elsewhere ({ key: 'data.paymentId' })`,
    );
  }
  try {
    return 'ctx' in source
      ? await resolveContextKey(metadata.key, source.ctx, handler)
      : await resolveArgumentsKey(metadata.key, source.args, handler);
  } catch (error) {
    if (!(error instanceof SerializationKeyError)) throw error;
    if (error.problem === 'missing' && !metadata.options.required) return undefined;
    const where = error.lookedIn.length ? ` (looked in ${error.lookedIn.join(', ')})` : '';
    throw keyError(metadata, error, `The idempotency key${where}`);
  }
}

/**
 * The `Idempotency-Key` header: a Structured Field string in the draft
 * (`"8e03978e-..."`), sent bare by most clients (as Stripe accepts it); both are read.
 */
function readHeader(metadata: IdempotentMetadata, ctx: ExecutionContext): string | undefined {
  const request = ctx.switchToHttp().getRequest<{ headers?: Record<string, string | string[] | undefined> }>();
  const raw = request.headers?.[IDEMPOTENCY_DEFAULTS.header];
  const text = metadata.key.text;
  if (raw === undefined) {
    if (!metadata.options.required) return undefined;
    throw new IdempotencyKeyError(text, 'missing', 'This operation requires an Idempotency-Key header.', metadata.handler);
  }
  // Node joins repeated headers with ", ".
  let value = (Array.isArray(raw) ? raw.join(', ') : raw).trim();
  if (value.startsWith('"')) {
    const parsed = parseSfString(value);
    if (parsed === undefined) {
      throw new IdempotencyKeyError(
        text,
        'invalid',
        'The Idempotency-Key header is not a valid Structured Field string.',
        metadata.handler,
      );
    }
    value = parsed;
  }
  if (value.trim() === '') throw new IdempotencyKeyError(text, 'empty', 'The Idempotency-Key header is empty.', metadata.handler);
  if (value.length > SERIALIZED_DEFAULTS.maxKeyLength) {
    throw new IdempotencyKeyError(
      text,
      'too-long',
      `The Idempotency-Key header is longer than ${SERIALIZED_DEFAULTS.maxKeyLength} characters.`,
      metadata.handler,
    );
  }
  return value;
}

/** RFC 8941 sf-string: `"` printable ASCII with `\"` and `\\` escapes `"`; `undefined` when malformed. */
export function parseSfString(text: string): string | undefined {
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return undefined;
  let out = '';
  for (let i = 1; i < text.length - 1; i++) {
    const c = text[i];
    if (c === '\\') {
      const next = text[++i];
      if (next !== '"' && next !== '\\') return undefined;
      out += next;
    } else if (c === '"' || c < ' ' || c > '~') {
      return undefined;
    } else {
      out += c;
    }
  }
  return out;
}

async function readScope(metadata: IdempotentMetadata, scope: ParsedSerializationKey, source: CallSource): Promise<string> {
  try {
    return 'ctx' in source
      ? await resolveContextKey(scope, source.ctx, metadata.handler)
      : await resolveArgumentsKey(scope, source.args, metadata.handler);
  } catch (error) {
    if (!(error instanceof SerializationKeyError)) throw error;
    const where = error.lookedIn.length ? ` (looked in ${error.lookedIn.join(', ')})` : '';
    throw keyError(metadata, error, `The scope of this operation's idempotency keys${where}`);
  }
}

function keyError(metadata: IdempotentMetadata, error: SerializationKeyError, what: string): IdempotencyKeyError {
  const text = error.key ?? metadata.key.text;
  switch (error.problem) {
    case 'missing':
      return new IdempotencyKeyError(text, 'missing', `${what} is missing or empty.`, metadata.handler);
    case 'too-long':
      return new IdempotencyKeyError(
        text,
        'too-long',
        `${what} is longer than ${SERIALIZED_DEFAULTS.maxKeyLength} characters.`,
        metadata.handler,
      );
    default:
      return new IdempotencyKeyError(text, 'invalid', `${what} is not a valid value (a string or a number).`, metadata.handler);
  }
}

async function fingerprintOf(metadata: IdempotentMetadata, source: CallSource): Promise<string | undefined> {
  const option = metadata.options.fingerprint;
  if (option === false) return undefined;
  if (option === undefined) return 'ctx' in source ? contextFingerprint(source.ctx) : argumentsFingerprint(source.args, source.isJob);
  const value = await ('ctx' in source
    ? (option as (c: ExecutionContext) => unknown)(source.ctx)
    : (option as (...a: unknown[]) => unknown)(...source.args));
  if (typeof value !== 'string')
    throw new TypeError(`@Idempotent on ${metadata.handler}: the fingerprint function must return a string, got ${typeof value}`);
  return digest(value);
}
