import { Logger, Module } from '@nestjs/common';
import { APP_FILTER, DiscoveryModule, HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { GatewayFiltersInstaller } from './filters/gateway-filters.installer';
import { SerializedExceptionFilter } from './filters/serialized-exception.filter';
import { BackendOutageLog } from './interceptors/backend-outage.log';
import { resolveSerializedOptions } from './config/serialized-options.resolver';
import { SerializedInterceptor } from './interceptors/serialized.interceptor';
import { IDEMPOTENCY_EXPORTS, IDEMPOTENCY_PROVIDERS } from './idempotency/idempotency.providers';
import { createLockProvider } from './lock-provider.factory';
import { LockProvider } from './lock.provider';
import { LockService } from './lock.service';
import { SerializedLockChecker } from './metadata/serialized-lock.checker';
import { SerializedMetadataAccessor } from './metadata/serialized-metadata.accessor';
import { SerializedHealthIndicator } from './observability/serialized-health.indicator';
import { SerializedStartupLine } from './observability/startup-line.logger';
import { loadOtelApi } from './observability/otel-api.loader';
import { SerializedTracing } from './observability/serialized.tracing';
import { missingPeerError } from './config/optional.peer';
import { OptionalPeersCheck } from './optional-peers.check';
import { SERIALIZED_LOGGER_CONTEXT, SERIALIZED_OPTIONS } from './serialized.constants';
import {
  SERIALIZED_ASYNC_OPTIONS_TYPE,
  SERIALIZED_MODULE_OPTIONS,
  SERIALIZED_OPTIONS_TYPE,
  SerializedConfigurableModule,
} from './serialized.module-definition';
import { TickRunner } from './schedule/tick.runner';
import { SerializedHandlersChecker } from './serialized-handlers.checker';
import { TransactionHostResolver } from './transaction/transaction-host.resolver';
import { TransactionLocks } from './transaction/transaction-locks.runner';
import type { ResolvedSerializedOptions, SerializedModuleOptions } from './serialized-options.interface';

/**
 * Registers the lock backend (`LockProvider`), `LockService` and the interceptor
 * behind `@Serialized`. Global: import it once, in the root module.
 *
 * `forRoot()` with no options reads the environment (`SERIALIZED_DRIVER`,
 * `REDIS_URL`, `DATABASE_URL`, `SERIALIZED_*`); options given in code win over it.
 * Invalid options or variables stop start-up with one message listing them all.
 *
 * It also registers `SerializedExceptionFilter` globally, so a lock error thrown
 * anywhere inside a request answers 400 / 429 / 503 in the transport's form
 * (`errorMapping` changes the body or turns this off; docs/errors.md).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: SERIALIZED_OPTIONS,
      inject: [SERIALIZED_MODULE_OPTIONS],
      useFactory: (options: SerializedModuleOptions) => resolveSerializedOptions(options),
    },
    {
      provide: LockProvider,
      inject: [SERIALIZED_OPTIONS],
      useFactory: (options: ResolvedSerializedOptions) => createLockProvider(options),
    },
    {
      // Transaction mode (docs/transactions.md): nothing is loaded until a handler or call uses it.
      provide: TransactionLocks,
      inject: [SERIALIZED_OPTIONS, ModuleRef],
      useFactory: (options: ResolvedSerializedOptions, moduleRef: ModuleRef) =>
        new TransactionLocks(
          {
            ...options,
            fencingSequence: options.postgres.fencingSequence,
            createSchema: options.postgres.createSchema,
            query: options.transaction.query,
          },
          new TransactionHostResolver(moduleRef),
        ),
    },
    SerializedHandlersChecker,
    {
      provide: LockService,
      inject: [LockProvider, SERIALIZED_OPTIONS, TransactionLocks],
      useFactory: (provider: LockProvider, options: ResolvedSerializedOptions, transactions: TransactionLocks) => {
        if (options.metrics === 'on' && !loadOtelApi()) throw missingPeerError("metrics: 'on'", '@opentelemetry/api');
        if (options.tracing === 'on' && !loadOtelApi()) throw missingPeerError("tracing: 'on'", '@opentelemetry/api');
        const service = new LockService(provider, { reentrant: options.reentrant, waitTimeoutMs: options.waitTimeoutMs, transactions });
        if (options.metrics === 'off') service.recordNoMetrics();
        if (options.tracing !== 'off') service.traceWith(SerializedTracing.create(provider, options.tracing));
        return service;
      },
    },
    SerializedMetadataAccessor,
    SerializedLockChecker,
    SerializedInterceptor,
    { provide: BackendOutageLog, useFactory: () => new BackendOutageLog(new Logger(SERIALIZED_LOGGER_CONTEXT)) },
    {
      provide: SerializedExceptionFilter,
      inject: [SERIALIZED_OPTIONS, HttpAdapterHost, BackendOutageLog],
      useFactory: (options: ResolvedSerializedOptions, adapterHost: HttpAdapterHost, outages: BackendOutageLog) =>
        new SerializedExceptionFilter(adapterHost, outages, options.errorMapping || {}),
    },
    {
      // Global, and catching only the library's errors: the app's filters keep the rest.
      // Nest skips a global enhancer whose factory returns null (errorMapping: false).
      provide: APP_FILTER,
      inject: [SERIALIZED_OPTIONS, SerializedExceptionFilter],
      useFactory: (options: ResolvedSerializedOptions, filter: SerializedExceptionFilter) =>
        options.errorMapping === false ? null : filter,
    },
    // Costs nothing until used: @nestjs/terminus is loaded on the first check.
    SerializedHealthIndicator,
    SerializedStartupLine,
    // A feature whose optional peer is missing stops start-up, not its first use.
    OptionalPeersCheck,
    // Gateways get no global filters from Nest: they get the same filter on their class.
    GatewayFiltersInstaller,
    // `@OncePerTick` methods: checked at start-up, claimed in the driver's backend when they fire.
    TickRunner,
    ...IDEMPOTENCY_PROVIDERS,
  ],
  exports: [
    SERIALIZED_OPTIONS,
    LockProvider,
    LockService,
    SerializedMetadataAccessor,
    SerializedInterceptor,
    BackendOutageLog,
    SerializedExceptionFilter,
    SerializedHealthIndicator,
    // Injected into every instance with a `@OncePerTick` method (property injection).
    TickRunner,
    ...IDEMPOTENCY_EXPORTS,
  ],
})
export class SerializedModule extends SerializedConfigurableModule {
  /** Configures the module from `options` (and, for what they leave out, the environment). Global. */
  static override forRoot(options: typeof SERIALIZED_OPTIONS_TYPE = {}) {
    return super.forRoot({ isGlobal: true, ...options });
  }

  /** Like `forRoot`, with options from a factory (`imports`, `inject`, `useFactory`). Global. */
  static override forRootAsync(options: typeof SERIALIZED_ASYNC_OPTIONS_TYPE) {
    return super.forRootAsync({ isGlobal: true, ...options });
  }
}
