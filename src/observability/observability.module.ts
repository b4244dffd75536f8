import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HealthController } from './health.controller';
import { MetricsController, PROMETHEUS_EXPORTER } from './metrics.controller';

/** `/health` always; `/metrics` when the app was given a Prometheus exporter (see `setUpPrometheusMetrics`). */
@Module({})
export class ObservabilityModule {
  static register(exporter?: PrometheusExporter): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: exporter ? [HealthController, MetricsController] : [HealthController],
      providers: exporter ? [{ provide: PROMETHEUS_EXPORTER, useValue: exporter }] : [],
    };
  }
}
