import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { SerializedModule, type SerializedModuleOptions } from 'nestjs-serialized';
import { AppConfigModule } from './config/app-config.module';
import type { AppConfig } from './config/app.config';
import { ObservabilityModule } from './observability/observability.module';
import { OverheadModule } from './overhead/overhead.module';
import { PaymentsModule } from './payments/payments.module';
import { ResourcesModule } from './resources/resources.module';
import { RewardsModule } from './rewards/rewards.module';
import { StoreModule } from './store/store.module';

export interface AppModuleOptions {
  config: AppConfig;
  /** Library options; left empty, the library reads SERIALIZED_* / REDIS_URL / DATABASE_URL. */
  serialized?: SerializedModuleOptions;
  /** Serves `GET /metrics` from it (see `setUpPrometheusMetrics`); without it only `/health`. */
  metrics?: PrometheusExporter;
  /** More modules (the BullMQ reports flow, test fixtures). */
  imports?: ModuleMetadata['imports'];
}

/** The example app: the scenarios of docs/example-app.md, each protected and naive, plus the overhead probe. */
@Module({})
export class AppModule {
  static register(options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.register(options.config),
        SerializedModule.forRoot(options.serialized ?? {}),
        StoreModule,
        RewardsModule,
        ResourcesModule,
        PaymentsModule,
        OverheadModule,
        ObservabilityModule.register(options.metrics, options.config.adminLocksToken !== undefined),
        ...(options.imports ?? []),
      ],
    };
  }
}
