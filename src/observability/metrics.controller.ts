import { Controller, Get, Header, Inject } from '@nestjs/common';
import { PrometheusSerializer, type PrometheusExporter } from '@opentelemetry/exporter-prometheus';

export const PROMETHEUS_EXPORTER = 'app:prometheus-exporter';

/** `GET /metrics`: the OpenTelemetry metrics (the library's `serialized_*` series among them) in Prometheus text format. */
@Controller('metrics')
export class MetricsController {
  private readonly serializer = new PrometheusSerializer();

  constructor(@Inject(PROMETHEUS_EXPORTER) private readonly exporter: PrometheusExporter) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    // Served through Nest (Express or Fastify alike) rather than the exporter's own server.
    const { resourceMetrics, errors } = await this.exporter.collect();
    if (errors.length > 0) throw new Error(`collecting metrics failed: ${errors.map(String).join('; ')}`);
    return this.serializer.serialize(resourceMetrics);
  }
}
