import type { ServerResponse } from 'node:http';
import { HttpException, Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { from, Observable, type Observer, type Subscriber, type Subscription } from 'rxjs';
import { SerializedError } from '../errors';
import { watchClientGone } from '../interceptors/client-gone.watch';
import type { HeldKey } from '../lock.service';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { captureResponse, type CapturedResponse, type ResponseCapture } from './http-response.capture';
import { describingHeaders, replayHttpResponse } from './http-response.replay';
import { readIdempotentCall, type IdempotentCall } from './idempotency-key.reader';
import { IdempotencyService } from './idempotency.service';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.defaults';
import { IdempotentMetadataAccessor } from './idempotent-metadata.accessor';
import type { IdempotentMetadata } from './idempotent-options.interface';
import type { StoredResponse } from './stored-response.codec';

/**
 * Runs an `@Idempotent` handler once per key and replays its response to the
 * duplicates. `@Idempotent` applies it.
 *
 * 1. Read the key (400 when required and missing, empty, too long) and the scope.
 * 2. A stored response → replayed at once (422 if stored for another request).
 * 3. Otherwise take the key's lock: wait in its fair queue (`reject`: 409 if busy),
 *    then look again — the first request may have finished meanwhile.
 * 4. Still nothing: run the handler holding the lock; record the response as it
 *    goes out (HTTP: after serialization and exception filters; RPC: the emitted
 *    values), store it if it may be stored, and only then release the lock — so a
 *    duplicate that gets the lock next always finds it.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);

  constructor(
    private readonly service: IdempotencyService,
    private readonly metadata: IdempotentMetadataAccessor,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.metadata.get(ctx.getHandler());
    if (!metadata) return next.handle();
    const method = ctx.getHandler();

    return new Observable<unknown>((subscriber) => {
      const waiting = new AbortController();
      const stopWatching = watchClientGone(ctx, () => {
        this.logger.debug(`Client left while waiting (${metadata.handler}); it leaves the queue`);
        waiting.abort(new ClientGoneError(metadata.handler));
      });
      let acquiring = true;
      let inner: Subscription | undefined;
      let first: FirstRun | undefined;
      const settled = (): void => {
        acquiring = false;
        stopWatching();
      };

      (async () => {
        const call = await readIdempotentCall(metadata, { ctx });
        if (!call) {
          settled();
          inner = this.service.runIntercepted(method, () => next.handle().subscribe(subscriber));
          return;
        }
        let record = await this.service.find(call, metadata);
        if (!record) {
          const held = await this.service.lock(call, metadata, waiting.signal);
          settled();
          try {
            if (!subscriber.closed) record = await this.service.find(call, metadata);
          } catch (error) {
            await held.release();
            throw error;
          }
          if (subscriber.closed) return held.release();
          if (!record) {
            first = new FirstRun(this.service, metadata, call, held, ctx, subscriber);
            inner = first.start((observer) => this.service.runIntercepted(method, () => next.handle().subscribe(observer)));
            return;
          }
          await held.release();
        }
        settled();
        this.replay(ctx, record, subscriber);
      })().catch((error) => {
        settled();
        if (error instanceof ClientGoneError || subscriber.closed) return;
        // SerializedExceptionFilter gives it its transport's form (problem details for ours).
        subscriber.error(error);
      });

      return () => {
        stopWatching();
        if (acquiring) waiting.abort(new ClientGoneError(metadata.handler));
        inner?.unsubscribe();
        first?.abandon();
      };
    });
  }

  private replay(ctx: ExecutionContext, record: StoredResponse, subscriber: Subscriber<unknown>): void {
    if (record.kind === 'http' && ctx.getType() === 'http') {
      subscriber.next(replayHttpResponse(ctx, this.adapterHost.httpAdapter, record));
      subscriber.complete();
      return;
    }
    from(record.kind === 'values' ? (record.values ?? []) : []).subscribe(subscriber);
  }
}

/** The first call with a key: runs the handler holding the key, records and stores its outcome, then releases. */
class FirstRun {
  private readonly values: unknown[] = [];
  private readonly capture: ResponseCapture | undefined;
  private failedOnLock = false;
  /** The handler's result settled (it may still be on its way out). */
  private handled = false;
  /** The outcome is decided and the key on its way back. */
  private finished = false;

  constructor(
    private readonly service: IdempotencyService,
    private readonly metadata: IdempotentMetadata,
    private readonly call: IdempotentCall,
    private readonly held: HeldKey,
    ctx: ExecutionContext,
    private readonly subscriber: Subscriber<unknown>,
  ) {
    const http = ctx.getType() === 'http';
    const response = http ? ctx.switchToHttp().getResponse<{ raw?: ServerResponse } & ServerResponse>() : undefined;
    const raw = response?.raw ?? response;
    // HTTP: what is stored is what goes out, recorded from before the handler runs.
    // The record is stored before the response's last bytes leave, the key released after.
    this.capture =
      raw && typeof raw.on === 'function' ? captureResponse(raw, this.maxBytes, (captured) => this.storeHttp(captured)) : undefined;
    void this.capture?.done.then(() => this.releaseHttp());
  }

  private get maxBytes(): number {
    return this.metadata.options.maxResponseBytes ?? IDEMPOTENCY_DEFAULTS.maxResponseBytes;
  }

  start(subscribe: (observer: Partial<Observer<unknown>>) => Subscription): Subscription {
    return this.service.locks.runHolding(this.held, () =>
      subscribe({
        next: (value) => {
          if (!this.capture) this.values.push(value);
          this.subscriber.next(value);
        },
        error: (error: unknown) => {
          this.handled = true;
          this.failedOnLock = isLockError(error);
          if (this.capture) return this.subscriber.error(error);
          void this.finishValues(false).then(() => this.subscriber.error(error));
        },
        complete: () => {
          this.handled = true;
          if (this.capture) return this.subscriber.complete();
          void this.finishValues(true).then(() => this.subscriber.complete());
        },
      }),
    );
  }

  /**
   * The caller unsubscribed. Before the handler's result settled, that tore the
   * handler down (an Observable whose client left): nothing will be sent or
   * stored, and the key is released now.
   */
  abandon(): void {
    if (this.handled) return;
    if (this.capture) this.capture.stop();
    else void this.finishValues(false);
  }

  /** The response is complete and about to leave: store it if it may be stored. Never throws. */
  private async storeHttp(captured: CapturedResponse): Promise<void> {
    if (this.finished) return;
    const storeErrors = this.metadata.options.storeServerErrors === true;
    if ((captured.status >= 500 || this.failedOnLock) && !storeErrors) return;
    if (captured.oversize) return this.service.warnOversize(this.metadata);
    await this.service.save(this.call, this.metadata, {
      fingerprint: this.call.fingerprint,
      kind: 'http',
      status: captured.status,
      headers: describingHeaders(captured.headers, this.metadata.storedHeaders),
      body: captured.body,
      storedAt: Date.now(),
    });
  }

  /** The response went out (stored, if it could be) or never will: the key is released. */
  private async releaseHttp(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    await this.held.release();
  }

  private async finishValues(completed: boolean): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    try {
      if (!completed) return;
      const record: StoredResponse = { fingerprint: this.call.fingerprint, kind: 'values', values: this.values, storedAt: Date.now() };
      if (Buffer.byteLength(JSON.stringify(this.values)) > this.maxBytes) return this.service.warnOversize(this.metadata);
      await this.service.save(this.call, this.metadata, record);
    } finally {
      await this.held.release();
    }
  }
}

/** A lock error of the handler's own (a nested `@Serialized`, `LockService.run`), raw or mapped to HTTP. */
function isLockError(error: unknown): boolean {
  return error instanceof SerializedError || (error instanceof HttpException && error.cause instanceof SerializedError);
}

/** Why a waiter left: its client disconnected or unsubscribed. */
class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
  constructor(handler: string) {
    super(`The caller of ${handler} left before it got the idempotency key`);
  }
}
