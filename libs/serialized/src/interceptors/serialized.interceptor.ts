import {
  Injectable,
  Logger,
  Optional,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Observable, type Subscription } from 'rxjs';
import { lockKeyOf, runOptionsOf } from '../metadata/serialized-run-options';
import { SerializedError } from '../errors';
import { resolveContextKey } from '../key/context-key.resolver';
import { LockService, type HeldKey } from '../lock.service';
import { HandlerHandshake } from '../metadata/handler.handshake';
import { SerializedMetadataAccessor } from '../metadata/serialized-metadata.accessor';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { BackendOutageLog } from './backend-outage.log';
import { watchClientGone } from './client-gone';
import { statusOf } from './serialized-error.mapper';

/**
 * Serializes a handler per key. `@Serialized` applies it; register it as
 * `APP_INTERCEPTOR` only if you prefer that (undecorated handlers pass through).
 *
 * The lock is taken before the handler runs and released when its result settles:
 * after the promise resolves or rejects, or the Observable completes, errors or
 * is unsubscribed. A client that leaves while waiting leaves the queue and its
 * handler never runs; a client that leaves while its handler runs does not stop it.
 *
 * Library errors, from acquiring or escaping the handler, pass on as they are:
 * `SerializedExceptionFilter` (registered by `SerializedModule`) gives them their
 * transport's form (400, 429, 503 — never a 500), wherever they were thrown. The
 * detail of a 503 is logged here (the handler is known here), once per outage.
 */
@Injectable()
export class SerializedInterceptor implements NestInterceptor {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly outages: BackendOutageLog;

  constructor(
    private readonly lockService: LockService,
    private readonly metadata: SerializedMetadataAccessor,
    @Optional() outages?: BackendOutageLog,
  ) {
    this.outages = outages ?? new BackendOutageLog(this.logger);
  }

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.metadata.get(ctx.getHandler(), ctx.getClass());
    // Undecorated, or another SerializedInterceptor (APP_INTERCEPTOR and the decorator's) already holds the key for this call.
    if (!metadata || this.lockService.handshake()?.isPendingFor(ctx.getHandler())) return next.handle();
    const handler = `${ctx.getClass().name}#${ctx.getHandler().name}`;

    return new Observable<unknown>((subscriber) => {
      const waiting = new AbortController();
      const stopWatching = watchClientGone(ctx, () => {
        this.logger.debug(`Client left while waiting (${handler}); it leaves the queue`);
        waiting.abort(new ClientGoneError(handler));
      });
      let held: HeldKey | undefined;
      let inner: Subscription | undefined;
      let done = false;
      let acquiring = true;

      const finish = (emit: () => void): void => {
        if (done) return;
        done = true;
        const release = held?.release() ?? Promise.resolve();
        held = undefined;
        // Release before the response goes out, so a client's next request finds the key free.
        void release.then(emit);
      };

      (async () => {
        const value = await resolveContextKey(metadata.parsedKey, ctx, handler);
        const acquired = await this.lockService.acquire(lockKeyOf(metadata, value), runOptionsOf(metadata, handler, waiting.signal));
        acquiring = false;
        stopWatching();
        if (subscriber.closed || done) return acquired.release();
        held = acquired;
        inner = this.lockService.runHolding(acquired, () =>
          next.handle().subscribe({
            next: (result) => subscriber.next(result),
            error: (error) => finish(() => subscriber.error(this.toTransport(error, handler, true))),
            complete: () => {
              this.outages.recovered();
              finish(() => subscriber.complete());
            },
          }),
          new HandlerHandshake(ctx.getHandler()),
        );
      })().catch((error) => {
        acquiring = false;
        stopWatching();
        if (error instanceof ClientGoneError) return; // nobody is listening
        if (!subscriber.closed) subscriber.error(this.toTransport(error, handler, false));
      });

      return () => {
        stopWatching();
        // Only a caller still waiting has anything to abort; an Error (and its stack) per request is not free.
        if (acquiring) waiting.abort(new ClientGoneError(handler));
        inner?.unsubscribe();
        finish(() => undefined);
      };
    });
  }

  /**
   * A 503's detail goes to the log (once per outage); any other outcome of a
   * request that held its lock shows the backend works again. The error itself
   * passes on unchanged, to the exception filters.
   */
  private toTransport(error: unknown, handler: string, held: boolean): unknown {
    if (error instanceof SerializedError && statusOf(error) === 503) this.outages.report(error, handler);
    else if (held) this.outages.recovered();
    return error;
  }
}

/** Why a waiter left: its client disconnected or unsubscribed. */
class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
  constructor(handler: string) {
    super(`The caller of ${handler} left before it got the lock`);
  }
}
