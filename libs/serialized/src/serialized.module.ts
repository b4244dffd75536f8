import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { resolveSerializedOptions } from './config/serialized-options.resolver';
import { SerializedInterceptor } from './interceptors/serialized.interceptor';
import { IDEMPOTENCY_EXPORTS, IDEMPOTENCY_PROVIDERS } from './idempotency/idempotency.providers';
import { createLockProvider } from './lock-provider.factory';
import { LockProvider } from './lock.provider';
import { LockService } from './lock.service';
import { SerializedMetadataAccessor } from './metadata/serialized-metadata.accessor';
import { SERIALIZED_OPTIONS } from './serialized.constants';
import {
  SERIALIZED_ASYNC_OPTIONS_TYPE,
  SERIALIZED_MODULE_OPTIONS,
  SERIALIZED_OPTIONS_TYPE,
  SerializedConfigurableModule,
} from './serialized.module-definition';
import type { ResolvedSerializedOptions, SerializedModuleOptions } from './serialized-options.interface';

/**
 * Registers the lock backend (`LockProvider`), `LockService` and the interceptor
 * behind `@Serialized`. Global: import it once, in the root module.
 *
 * `forRoot()` with no options reads the environment (`SERIALIZED_DRIVER`,
 * `REDIS_URL`, `DATABASE_URL`, `SERIALIZED_*`); options given in code win over it.
 * Invalid options or variables stop start-up with one message listing them all.
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
      provide: LockService,
      inject: [LockProvider, SERIALIZED_OPTIONS],
      useFactory: (provider: LockProvider, options: ResolvedSerializedOptions) => {
        const service = new LockService(provider);
        service.reentrant = options.reentrant;
        return service;
      },
    },
    SerializedMetadataAccessor,
    SerializedInterceptor,
    ...IDEMPOTENCY_PROVIDERS,
  ],
  exports: [SERIALIZED_OPTIONS, LockProvider, LockService, SerializedMetadataAccessor, SerializedInterceptor, ...IDEMPOTENCY_EXPORTS],
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
