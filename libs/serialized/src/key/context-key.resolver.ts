import type { ExecutionContext } from '@nestjs/common';
import { SerializationKeyError } from '../errors/serialization-key.error';
import {
  NAME_LOOKUP_ORDER,
  REQUEST_SOURCES,
  type ParsedSerializationKey,
  type ParsedSerializedKey,
  type RequestSource,
} from './serialization-key.parser';
import { keySetValuesOf, keyValueOf, readPath } from './key-value.reader';
import { distinctKeys } from './key-set.order';

/**
 * Reads a key's value for a handler reached through an interceptor (HTTP, RPC,
 * WebSocket, GraphQL). HTTP keys are read from the request object Nest hands to
 * guards and handlers, so a `user` set by a guard or Passport is seen on Express
 * and Fastify alike.
 */
export async function resolveContextKey(key: ParsedSerializationKey, ctx: ExecutionContext, handler: string): Promise<string> {
  const value = await contextKeyResolver(key, handler)(ctx);
  // One key only here (`@Idempotent`): a key function's array is not a value.
  if (typeof value !== 'string')
    throw new SerializationKeyError(key.text, 'not-scalar', ['the value returned by the key function'], handler);
  return value;
}

/**
 * Reads the key from a context: the value — or the values of a key set (an array
 * key, or a key function that returned an array), distinct, in the order found —
 * or a promise of it when the key function or `transform` is async. Throws
 * (synchronously) what {@link resolveContextKey} rejects with.
 */
export type ContextKeyResolver = (ctx: ExecutionContext) => string | readonly string[] | Promise<string | readonly string[]>;

/**
 * {@link resolveContextKey} prepared once per handler (the interceptor caches it):
 * what does not depend on the request — the lookup order, the names of the places
 * looked in, the path's source — is worked out here rather than on every request.
 */
export function contextKeyResolver(key: ParsedSerializedKey, handler: string): ContextKeyResolver {
  if (key.kind === 'set')
    return keySetResolver(
      key.text,
      key.members.map((member) => contextKeyResolver(member, handler)),
      handler,
    );
  if (key.kind === 'function') {
    const fn = key.fn as (c: ExecutionContext) => unknown;
    const lookedIn = ['the value returned by the key function'];
    // A key function may name a key set by returning an array.
    const valueOf = (value: unknown) =>
      Array.isArray(value) ? keySetValuesOf(key, [{ key, value, lookedIn }], handler) : keyValueOf(key, value, lookedIn, handler);
    return (ctx) => {
      const value = fn(ctx);
      return isThenable(value) ? Promise.resolve(value).then(valueOf) : valueOf(value);
    };
  }
  const fromRequest = requestKeyResolver(key, handler);
  const dataLookedIn: Record<string, readonly string[]> = { rpc: [`data.${key.text}`], ws: [`data.${key.text}`] };
  return (ctx) => {
    const type = ctx.getType<string>();
    if (type === 'http') return fromRequest(ctx.switchToHttp().getRequest());
    if (type === 'graphql') {
      const [, args, gqlContext] = ctx.getArgs();
      return fromRequest({ ...gqlContext?.req, params: args, user: gqlContext?.req?.user });
    }
    // rpc and ws: the key is a path into the message payload.
    const data = type === 'rpc' ? ctx.switchToRpc().getData() : ctx.switchToWs().getData();
    return keyValueOf(key, readPath(data, key.segments), dataLookedIn[type] ?? [`data.${key.text}`], handler);
  };
}

/** An array key: each member read as a key of its own, then the values together, distinct, in order. */
function keySetResolver(text: string, members: readonly ContextKeyResolver[], handler: string): ContextKeyResolver {
  const together = (values: readonly (string | readonly string[])[]) => distinctKeys(values.flat(), text, [], handler);
  return (ctx) => {
    const values = members.map((member) => member(ctx));
    return values.some(isThenable) ? Promise.all(values).then(together) : together(values as (string | readonly string[])[]);
  };
}

type RequestKeyResolver = (request: Record<string, unknown> | undefined) => string | Promise<string>;

function requestKeyResolver(key: ParsedSerializationKey & { kind: 'path' }, handler: string): RequestKeyResolver {
  const { text, segments } = key;
  if (segments.length === 1) {
    // The error names every place looked in up to where the search stopped.
    const lookedIn = NAME_LOOKUP_ORDER.map((_, i) => NAME_LOOKUP_ORDER.slice(0, i + 1).map((source) => `${source}.${text}`));
    return (request) => {
      for (let i = 0; i < NAME_LOOKUP_ORDER.length; i++) {
        const found = readPath(request?.[NAME_LOOKUP_ORDER[i]], segments);
        if (found !== undefined && found !== null && found !== '') return keyValueOf(key, found, lookedIn[i], handler);
      }
      return keyValueOf(key, undefined, lookedIn[lookedIn.length - 1], handler);
    };
  }
  const source = segments[0] as RequestSource;
  if (!(REQUEST_SOURCES as readonly string[]).includes(source)) {
    // A programming error (500), not a client one: the key names no request source.
    // Thrown per request, not at start-up: the same key may serve a transport that reads a payload.
    const message = `@Serialized("${text}") on ${handler}: "${segments[0]}" is not a request source; a path on a route handler starts with one of ${REQUEST_SOURCES.join(', ')}`;
    return () => {
      throw new TypeError(message);
    };
  }
  const rest = source === 'headers' ? [segments.slice(1).join('.').toLowerCase()] : segments.slice(1);
  const lookedIn = [`${source === 'user' ? 'req.user' : source}.${segments.slice(1).join('.')}`];
  return (request) => keyValueOf(key, readPath(request?.[source], rest), lookedIn, handler);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
