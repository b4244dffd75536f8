import type { ExecutionContext } from '@nestjs/common';
import { NAME_LOOKUP_ORDER, REQUEST_SOURCES, type ParsedSerializationKey, type RequestSource } from './serialization-key';
import { keyValueOf, readPath } from './key-value';

/**
 * Reads a key's value for a handler reached through an interceptor (HTTP, RPC,
 * WebSocket, GraphQL). HTTP keys are read from the request object Nest hands to
 * guards and handlers, so a `user` set by a guard or Passport is seen on Express
 * and Fastify alike.
 */
export async function resolveContextKey(key: ParsedSerializationKey, ctx: ExecutionContext, handler: string): Promise<string> {
  if (key.kind === 'function') {
    const value = await (key.fn as (c: ExecutionContext) => unknown)(ctx);
    return keyValueOf(key, value, ['the value returned by the key function'], handler);
  }
  const type = ctx.getType<string>();
  if (type === 'http') return resolveRequestKey(key, key.segments, ctx.switchToHttp().getRequest(), handler);
  if (type === 'graphql') {
    const [, args, gqlContext] = ctx.getArgs();
    return resolveRequestKey(key, key.segments, { ...gqlContext?.req, params: args, user: gqlContext?.req?.user }, handler);
  }
  // rpc and ws: the key is a path into the message payload.
  const data = type === 'rpc' ? ctx.switchToRpc().getData() : ctx.switchToWs().getData();
  return keyValueOf(key, readPath(data, key.segments), [`data.${key.text}`], handler);
}

function resolveRequestKey(
  key: ParsedSerializationKey,
  segments: readonly string[],
  request: Record<string, unknown>,
  handler: string,
): string | Promise<string> {
  const text = key.text;
  if (segments.length === 1) {
    const lookedIn: string[] = [];
    for (const source of NAME_LOOKUP_ORDER) {
      lookedIn.push(`${source}.${text}`);
      const found = readPath(request?.[source], segments);
      if (found !== undefined && found !== null && found !== '') return keyValueOf(key, found, lookedIn, handler);
    }
    return keyValueOf(key, undefined, lookedIn, handler);
  }
  const source = segments[0] as RequestSource;
  if (!(REQUEST_SOURCES as readonly string[]).includes(source)) {
    // A programming error (500), not a client one: the key names no request source.
    throw new TypeError(
      `@Serialized("${text}") on ${handler}: "${segments[0]}" is not a request source; a path on a route handler starts with one of ${REQUEST_SOURCES.join(', ')}`,
    );
  }
  const found =
    source === 'headers'
      ? readPath(request?.headers, [segments.slice(1).join('.').toLowerCase()])
      : readPath(request?.[source], segments.slice(1));
  return keyValueOf(key, found, [`${source === 'user' ? 'req.user' : source}.${segments.slice(1).join('.')}`], handler);
}
