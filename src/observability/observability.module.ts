import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { AdminLocksController } from './admin-locks.controller';
import { HealthController } from './health.controller';
import { MetricsController, PROMETHEUS_EXPORTER } from './metrics.controller';

/**
 * `/health` always; `/metrics` when the app was given a Prometheus exporter (see
 * `setUpPrometheusMetrics`); `/admin/locks/:key` only with `ADMIN_LOCKS_TOKEN`.
 */
@Module({})
export class ObservabilityModule {
  static register(exporter?: PrometheusExporter, adminLocks = false): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController, ...(exporter ? [MetricsController] : []), ...(adminLocks ? [AdminLocksController] : [])],
      providers: exporter ? [{ provide: PROMETHEUS_EXPORTER, useValue: exporter }] : [],
    };
  }
}
