import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { LockBusyError, LockTimeoutError } from '../errors';
import { LockProvider } from '../lock.provider';
import { LockService, type HeldKey } from '../lock.service';
import { InterceptedCall } from '../metadata/intercepted.call';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { IdempotencyConflictError, IdempotencyMismatchError } from './errors';
import { readIdempotencyTtlMs } from './idempotency-environment.reader';
import type { IdempotentCall } from './idempotency-key.reader';
import { hasIdempotencyStore, type IdempotencyStore } from './idempotency.store';
import type { IdempotentMetadata } from './idempotent-options.interface';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import type { StoredResponse } from './stored-response.codec';

/**
 * What `@Idempotent` needs from the app, in one place: the key's lock (through
 * `LockService`, so the fair queue of the active backend orders duplicates), the
 * store of the active backend, the default TTL, and the warnings it logs once.
 * One per app: two apps in one process share nothing.
 */
@Injectable()
export class IdempotencyService implements OnApplicationShutdown {
  /** Default `ttlMs` (`SERIALIZED_IDEMPOTENCY_TTL_MS`, else 24 h); read when the module starts. */
  readonly defaultTtlMs: number;
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly warned = new Set<string>();
  // The decorated method the interceptor is about to call (metadata/intercepted.call.ts).
  private readonly interceptedCalls = new AsyncLocalStorage<InterceptedCall>();
  private built: IdempotencyStore | undefined;

  constructor(
    readonly locks: LockService,
    private readonly provider: LockProvider,
  ) {
    this.defaultTtlMs = readIdempotencyTtlMs();
  }

  /** The active backend's store, built on first use. @throws Error when the provider cannot keep records */
  get store(): IdempotencyStore {
    if (this.built) return this.built;
    if (!hasIdempotencyStore(this.provider)) {
      throw new Error(
        `@Idempotent needs a LockProvider that can keep idempotency records (createIdempotencyStore()); ${this.provider.constructor.name} cannot`,
      );
    }
    return (this.built = this.provider.createIdempotencyStore());
  }

  /**
   * The stored response of `call`, if any.
   * @throws IdempotencyMismatchError (422) when it was stored for a different request
   */
  async find(call: IdempotentCall, metadata: IdempotentMetadata): Promise<StoredResponse | undefined> {
    const record = await this.store.get(call.key);
    if (record && record.fingerprint !== undefined && call.fingerprint !== undefined && record.fingerprint !== call.fingerprint) {
      throw new IdempotencyMismatchError(call.key, metadata.handler);
    }
    return record;
  }

  /**
   * Takes the key's lock: waits in its queue (`wait`), or fails at once when busy
   * (`reject`). Busy in `reject` mode, or waited `waitTimeoutMs` in vain, is the
   * draft's 409: the first request is still running.
   */
  async lock(call: IdempotentCall, metadata: IdempotentMetadata, signal?: AbortSignal): Promise<HeldKey> {
    const { mode, waitTimeoutMs } = metadata.options;
    try {
      return await this.locks.acquire(call.key, { mode, waitTimeoutMs, signal, handler: metadata.handler });
    } catch (error) {
      if ((error instanceof LockBusyError && error.reason === 'held') || error instanceof LockTimeoutError) {
        throw new IdempotencyConflictError(call.key, metadata.handler, error);
      }
      throw error;
    }
  }

  /**
   * Stores `record` for the handler's TTL. Never throws: the response has gone out
   * already; a record that could not be stored only means the next duplicate runs
   * the handler, which is logged.
   */
  async save(call: IdempotentCall, metadata: IdempotentMetadata, record: StoredResponse): Promise<void> {
    try {
      await this.store.set(call.key, record, metadata.options.ttlMs ?? this.defaultTtlMs);
    } catch (error) {
      this.logger.error(
        `@Idempotent on ${metadata.handler}: could not store the response (${(error as Error).message}); a duplicate will run the handler again`,
      );
    }
  }

  /** Logs, once per handler, that a response was too large to store. */
  warnOversize(metadata: IdempotentMetadata): void {
    if (this.warned.has(metadata.handler)) return;
    this.warned.add(metadata.handler);
    const limit = metadata.options.maxResponseBytes ?? IDEMPOTENCY_DEFAULTS.maxResponseBytes;
    this.logger.warn(
      `@Idempotent on ${metadata.handler}: a response larger than maxResponseBytes (${limit}) was not stored; its duplicates run the handler (logged once per handler)`,
    );
  }

  /** Runs `fn` so that the decorated `handler`, called inside it, knows the interceptor handles it (metadata/intercepted.call.ts). */
  runIntercepted<R>(handler: object, fn: () => R): R {
    return this.interceptedCalls.run(new InterceptedCall(handler), fn);
  }

  /** The intercepted call the interceptor set for the handler it is calling, if any. @internal */
  interceptedCall(): InterceptedCall | undefined {
    return this.interceptedCalls.getStore();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.built?.close();
  }
}
