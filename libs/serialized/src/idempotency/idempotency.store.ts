import type { StoredResponse } from './stored-response.codec';

/**
 * Where `@Idempotent` keeps responses: in the active backend, so every instance
 * that shares the locks shares the responses. Keys are the calls' lock keys
 * (`idempotent:<Class>.<method>:<digest>`); each store puts them under its
 * provider's `keyPrefix`.
 */
export interface IdempotencyStore {
  /** The live record of `key`, or `undefined` (never stored, or expired). */
  get(key: string): Promise<StoredResponse | undefined>;
  /** Stores `record` for `ttlMs`, replacing an earlier (expired) one. */
  set(key: string, record: StoredResponse, ttlMs: number): Promise<void>;
  /** Releases what the store opened itself (not the provider's connections). */
  close(): Promise<void>;
}

/**
 * The capability of a `LockProvider` to keep idempotency records in its backend.
 * The in-memory, Redis and PostgreSQL providers have it; a provider of your own
 * can implement it to back `@Idempotent`.
 */
export interface IdempotencyStoreSource {
  /** Builds the store; called once per app, the first time `@Idempotent` needs it. */
  createIdempotencyStore(): IdempotencyStore;
}

export function hasIdempotencyStore(provider: object): provider is IdempotencyStoreSource {
  return typeof (provider as Partial<IdempotencyStoreSource>).createIdempotencyStore === 'function';
}
