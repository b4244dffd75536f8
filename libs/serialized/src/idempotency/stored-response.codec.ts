/** A stored outcome of the first call with a key, replayed to its duplicates. */
export interface StoredResponse {
  /** Fingerprint of the request that produced it (`undefined`: not checked). */
  readonly fingerprint: string | undefined;
  /**
   * `http`: the response as it went out (status, describing headers, body bytes).
   * `values`: what an RPC handler or a method returned (its emitted values, as JSON).
   */
  readonly kind: 'http' | 'values';
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: Buffer;
  readonly values?: readonly unknown[];
  /** When it was stored (ms since the epoch). */
  readonly storedAt: number;
}

interface Encoded {
  v: 1;
  f?: string;
  k: 'http' | 'values';
  s?: number;
  h?: Record<string, string | readonly string[]>;
  b?: string;
  x?: readonly unknown[];
  t: number;
}

/** The text a Redis or PostgreSQL store keeps: JSON, the body in base64. */
export function encodeStoredResponse(record: StoredResponse): string {
  const encoded: Encoded = { v: 1, f: record.fingerprint, k: record.kind, t: record.storedAt };
  if (record.kind === 'http') {
    encoded.s = record.status;
    encoded.h = { ...record.headers };
    encoded.b = record.body?.toString('base64') ?? '';
  } else {
    encoded.x = record.values ?? [];
  }
  return JSON.stringify(encoded);
}

/** @throws Error on text this version did not write (a newer library's record, or foreign data) */
export function decodeStoredResponse(text: string): StoredResponse {
  const encoded = JSON.parse(text) as Encoded;
  if (encoded?.v !== 1 || (encoded.k !== 'http' && encoded.k !== 'values')) {
    throw new Error('an idempotency record in an unknown format');
  }
  if (encoded.k === 'values') return { fingerprint: encoded.f, kind: 'values', values: encoded.x ?? [], storedAt: encoded.t };
  return {
    fingerprint: encoded.f,
    kind: 'http',
    status: encoded.s,
    headers: encoded.h ?? {},
    body: Buffer.from(encoded.b ?? '', 'base64'),
    storedAt: encoded.t,
  };
}
