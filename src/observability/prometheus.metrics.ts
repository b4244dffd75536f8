import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/** The example app's metrics pipeline: a MeterProvider read by the Prometheus exporter. */
export interface PrometheusMetrics {
  readonly exporter: PrometheusExporter;
  readonly meterProvider: MeterProvider;
}

/**
 * Registers a global MeterProvider whose reader is the Prometheus exporter, as an
 * app with OpenTelemetry's NodeSDK would. Call it before the app is created: the
 * library's `LockService` takes its meter from the global provider when it is
 * built. The exporter starts no server of its own: `GET /metrics` on the app's
 * port serves it (see MetricsController).
 */
export function setUpPrometheusMetrics(): PrometheusMetrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  if (!metrics.setGlobalMeterProvider(meterProvider)) {
    throw new Error('A global OpenTelemetry MeterProvider is already registered: set up metrics once per process');
  }
  return { exporter, meterProvider };
}
