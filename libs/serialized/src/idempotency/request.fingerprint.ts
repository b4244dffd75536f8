import { createHash } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';

/** SHA-256 of `text`, base64url (43 characters). */
export function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * JSON with object keys sorted, so that `{"a":1,"b":2}` and `{"b":2,"a":1}` — one
 * request re-serialized by a client library — count as the same. Bytes become
 * base64, a cycle becomes a marker instead of a stack overflow.
 */
export function canonicalJson(value: unknown): string {
  const seen = new WeakSet<object>();
  const walk = (v: unknown): string => {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return 'null';
    if (v === null || typeof v === 'boolean' || typeof v === 'number') return JSON.stringify(v) ?? 'null';
    if (typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'bigint') return JSON.stringify(`${v}n`);
    if (ArrayBuffer.isView(v)) return JSON.stringify({ $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') });
    const object = v as Record<string, unknown> & { toJSON?: () => unknown };
    if (seen.has(object)) return '"[cycle]"';
    seen.add(object);
    try {
      if (typeof object.toJSON === 'function') return walk(object.toJSON());
      if (Array.isArray(object)) return `[${object.map(walk).join(',')}]`;
      const keys = Object.keys(object)
        .filter((k) => object[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${walk(object[k])}`).join(',')}}`;
    } finally {
      seen.delete(object);
    }
  };
  return walk(value);
}

interface HttpRequestLike {
  method?: string;
  originalUrl?: string;
  url?: string;
  body?: unknown;
}

/**
 * The default fingerprint of a request reaching a handler: HTTP method, URL (path
 * and query as sent) and a hash of the parsed body; RPC and WebSocket: the message
 * data.
 */
export function contextFingerprint(ctx: ExecutionContext): string {
  switch (ctx.getType<string>()) {
    case 'http': {
      const request = ctx.switchToHttp().getRequest<HttpRequestLike>();
      return digest(`${request.method ?? ''} ${request.originalUrl ?? request.url ?? ''}\n${digest(canonicalJson(request.body))}`);
    }
    case 'rpc':
      return digest(canonicalJson(ctx.switchToRpc().getData()));
    case 'ws':
      return digest(canonicalJson(ctx.switchToWs().getData()));
    default:
      return digest(canonicalJson(ctx.getArgs()[1]));
  }
}

/** The default fingerprint of a call of a method that is not a route handler: its arguments (a BullMQ job: its name and data). */
export function argumentsFingerprint(args: readonly unknown[], isJob: boolean): string {
  if (isJob) {
    const job = args[0] as { name?: string; data?: unknown };
    return digest(canonicalJson({ job: job.name, data: job.data }));
  }
  return digest(canonicalJson(args));
}
