import { StreamableFile, type ExecutionContext, type HttpServer } from '@nestjs/common';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import type { StoredResponse } from './stored-response.codec';

/**
 * Sets a stored response's status and headers (plus `Idempotent-Replayed: true`)
 * on the response and returns the value for the handler's place: its body bytes
 * as a `StreamableFile`, which Express and Fastify send as they are (Content-Length
 * included), or `undefined` for an empty body.
 */
export function replayHttpResponse(ctx: ExecutionContext, adapter: HttpServer, record: StoredResponse): StreamableFile | undefined {
  const response = ctx.switchToHttp().getResponse<unknown>();
  adapter.status(response, record.status ?? 200);
  for (const [name, value] of Object.entries(record.headers ?? {})) adapter.setHeader(response, name, value as string);
  adapter.setHeader(response, IDEMPOTENCY_DEFAULTS.replayedHeader, 'true');
  const body = record.body;
  if (!body || body.length === 0) return undefined;
  return new StreamableFile(body, { length: body.length });
}

/** The headers of a captured response that describe it and are stored: the defaults and `extra` (lower case). */
export function describingHeaders(
  headers: Readonly<Record<string, string | string[]>>,
  stored: readonly string[],
): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const name of stored) if (headers[name] !== undefined) kept[name] = headers[name];
  return kept;
}
