import { Injectable, Logger, Optional, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { SerializedError } from '../errors';
import { LockService } from '../lock.service';
import { SerializedMetadataAccessor } from '../metadata/serialized-metadata.accessor';
import { SERIALIZED_LOGGER_CONTEXT } from '../serialized.constants';
import { BackendOutageLog } from './backend-outage.log';
import { SerializedCall, type SerializedCallHost } from './serialized.call';
import { planSerializedRoute, SerializedRoutePlans, type SerializedRoutePlan } from './serialized-route.plan';
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
  // The metadata is fixed once the decorators ran: each handler's is read and prepared once.
  private readonly plans = new SerializedRoutePlans();
  private readonly host: SerializedCallHost;

  constructor(
    private readonly lockService: LockService,
    private readonly metadata: SerializedMetadataAccessor,
    @Optional() outages?: BackendOutageLog,
  ) {
    this.outages = outages ?? new BackendOutageLog(this.logger);
    this.host = {
      lockService,
      logger: this.logger,
      toTransport: (error, handler, held) => this.toTransport(error, handler, held),
      recovered: () => this.outages.recovered(),
    };
  }

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = ctx.getHandler();
    const cls = ctx.getClass();
    let plan = this.plans.get(handler, cls);
    if (plan === undefined) this.plans.set(handler, cls, (plan = this.plan(handler, cls)));
    // Undecorated, or another SerializedInterceptor (APP_INTERCEPTOR and the decorator's) already holds the key for this call.
    if (!plan || this.lockService.interceptedCall()?.isPendingFor(handler)) return next.handle();
    return new Observable<unknown>((subscriber) => new SerializedCall(this.host, plan, ctx, next, subscriber));
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

  private plan(handler: object, cls: object): SerializedRoutePlan | null {
    const metadata = this.metadata.get(handler, cls);
    if (!metadata) return null;
    return planSerializedRoute(metadata, `${(cls as { name: string }).name}#${(handler as { name: string }).name}`);
  }
}
