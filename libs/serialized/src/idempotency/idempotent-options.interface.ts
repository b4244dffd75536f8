import type { ExecutionContext } from '@nestjs/common';
import type { SerializedMode } from '../lock.service';
import type { ParsedSerializationKey, SerializationKey } from '../key/serialization-key.parser';

/**
 * Computes a request's fingerprint: the same key with a different fingerprint is a
 * 422. On a route handler it receives the `ExecutionContext`; on any other method,
 * the method's arguments.
 */
export type IdempotencyFingerprintFn =
  | ((context: ExecutionContext) => string | Promise<string>)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  | ((...args: any[]) => string | Promise<string>);

/** Options of `@Idempotent(options)`. */
export interface IdempotentOptions {
  /**
   * Where the idempotency key is read: any key form of `@Serialized`. Default: the
   * `Idempotency-Key` request header (`'headers.idempotency-key'`).
   */
  key?: SerializationKey;
  /**
   * A key form resolved per request (`'user.id'`, `'params.accountId'`, a function):
   * its value partitions the keys, so two tenants' identical keys never meet.
   * Unlike `@Serialized`'s `scope`, this is not a literal string. Keys are always
   * partitioned per handler (`<Class>.<method>`) as well.
   */
  scope?: SerializationKey;
  /** How long the response is replayed (default `SERIALIZED_IDEMPOTENCY_TTL_MS`, else 24 h). */
  ttlMs?: number;
  /** `wait` (default): a duplicate waits for the first and gets its response. `reject`: 409 while the first runs. */
  mode?: SerializedMode;
  /** How long a duplicate waits for the first in `wait` mode (default: the module's `waitTimeoutMs`); then 409. */
  waitTimeoutMs?: number;
  /** A request without a key is a 400 (default false: it runs without idempotency). */
  required?: boolean;
  /** Store and replay 5xx responses and lock errors too (default false: the next attempt runs the handler). */
  storeServerErrors?: boolean;
  /**
   * What makes two requests "the same": default method, URL and a hash of the body
   * (RPC: pattern and data; a method: its arguments, a BullMQ job's name and data).
   * A function replaces it; `false` turns the 422 check off.
   */
  fingerprint?: IdempotencyFingerprintFn | false;
  /** Response headers stored besides Content-Type, Content-Encoding, Content-Language, Content-Disposition, Location and ETag. */
  headers?: readonly string[];
  /** Responses whose body is larger are not stored (default 1 MiB); their duplicates run the handler. */
  maxResponseBytes?: number;
}

/** What `@Idempotent` stores under `serialized:idempotent`. */
export interface IdempotentMetadata {
  readonly options: Readonly<IdempotentOptions>;
  readonly key: ParsedSerializationKey;
  readonly scope: ParsedSerializationKey | undefined;
  /** Whether the key is the default `Idempotency-Key` header (read as a Structured Field string). */
  readonly defaultKey: boolean;
  /** `<Class>.<method>`: every key is partitioned by it. */
  readonly route: string;
  /** `Class#method`, for messages. */
  readonly handler: string;
  /** Headers stored with a response (lower case). */
  readonly storedHeaders: readonly string[];
}
