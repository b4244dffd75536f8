import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** A response as it went out. */
export interface CapturedResponse {
  /** Whether the response was ended (every byte handed to Node); false when its connection closed first. */
  readonly complete: boolean;
  /** Whether the body outgrew the limit (its bytes were then dropped). */
  readonly oversize: boolean;
  readonly status: number;
  /** Every header, names in lower case. */
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly body: Buffer;
}

type Chunk = string | Uint8Array | null | undefined | ((error?: Error | null) => void);
const METHODS = ['write', 'end', 'writeHead'] as const;

/** A recording in progress. */
export interface ResponseCapture {
  /** Resolves when the response ends, or with `complete: false` once `stop()` is called first. */
  readonly done: Promise<CapturedResponse>;
  /** Ends the recording (the response will not be sent: its handler was torn down). */
  stop(): void;
}

/**
 * Records what is written to `raw` (Node's `ServerResponse`, under Express and
 * Fastify alike) from now until it ends: the status, the headers (those set before
 * and those passed to `writeHead`), and the body bytes up to `maxBytes`. What is
 * recorded is exactly what went out, after Nest's serialization, exception
 * filters and interceptors. A client that left does not end the recording: Nest
 * still ends the response, and that response is the one its retry should get.
 */
export function captureResponse(
  raw: ServerResponse,
  maxBytes: number,
  beforeEnd?: (captured: CapturedResponse) => Promise<void>,
): ResponseCapture {
  const chunks: Buffer[] = [];
  const headHeaders: Record<string, string | string[]> = {};
  let size = 0;
  let oversize = false;
  const saved = METHODS.map((name) => [name, Object.getOwnPropertyDescriptor(raw, name)] as const);
  const original = { write: raw.write, end: raw.end, writeHead: raw.writeHead };

  const add = (chunk: Chunk, encoding?: unknown): void => {
    if (chunk === null || chunk === undefined || typeof chunk === 'function' || oversize) return;
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size += bytes.length;
    if (size > maxBytes) {
      oversize = true;
      chunks.length = 0;
    } else {
      chunks.push(Buffer.from(bytes));
    }
  };
  const restore = (): void => {
    for (const [name, descriptor] of saved) {
      if (descriptor) Object.defineProperty(raw, name, descriptor);
      else delete (raw as unknown as Record<string, unknown>)[name];
    }
  };

  let settle!: (complete: boolean) => CapturedResponse | undefined;
  let finish!: (captured: CapturedResponse) => void;
  const done = new Promise<CapturedResponse>((resolve) => {
    let settled = false;
    finish = resolve;
    settle = (complete: boolean): CapturedResponse | undefined => {
      if (settled) return undefined;
      settled = true;
      restore();
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(raw.getHeaders())) {
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value : String(value);
      }
      Object.assign(headers, headHeaders);
      const captured = { complete, oversize, status: raw.statusCode, headers, body: Buffer.concat(chunks) };
      if (!complete || !beforeEnd) resolve(captured);
      return captured;
    };

    raw.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      const headers = typeof args[1] === 'string' ? args[2] : args[1];
      if (Array.isArray(headers)) {
        for (let i = 0; i + 1 < headers.length; i += 2) headHeaders[String(headers[i]).toLowerCase()] = String(headers[i + 1]);
      } else if (headers && typeof headers === 'object') {
        for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders)) {
          if (value !== undefined) headHeaders[name.toLowerCase()] = Array.isArray(value) ? value : String(value);
        }
      }
      return (original.writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['writeHead'];
    raw.write = function (this: ServerResponse, chunk: Chunk, ...rest: unknown[]) {
      add(chunk, rest[0]);
      return (original.write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as ServerResponse['write'];
    raw.end = function (this: ServerResponse, chunk?: Chunk, ...rest: unknown[]) {
      add(chunk, rest[0]);
      const captured = settle(true);
      const end = (): ServerResponse => (original.end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
      if (!captured || !beforeEnd) return end();
      // The last bytes leave only once `beforeEnd` is done (the record is stored):
      // a client that has its response and retries at once finds the record.
      void beforeEnd(captured)
        .catch(() => undefined)
        .then(() => {
          end();
          finish(captured);
        });
      return this;
    } as ServerResponse['end'];
  });
  return {
    done,
    stop: () => {
      settle(false);
    },
  };
}
