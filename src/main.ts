import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { loadAppConfig } from './config/app.config';
import { setUpPrometheusMetrics } from './observability/prometheus.metrics';

async function main(): Promise<void> {
  const config = loadAppConfig();
  // Before the app: the library's LockService takes its meter from the global MeterProvider when built.
  const { exporter } = setUpPrometheusMetrics();
  const app = await createApp({ config, reports: config.reports.enabled, digest: config.digest.enabled, metrics: exporter });
  app.enableShutdownHooks();
  await app.listen(config.port, '0.0.0.0');
  Logger.log(
    `Example app on http://localhost:${config.port} (${config.adapter}, store: ${config.store}, reports: ${config.reports.enabled ? 'on' : 'off'}, transaction-mode rewards: ${config.transactionalRewards ? 'on' : 'off'}, digest: ${config.digest.enabled ? config.digest.cron : 'off'})`,
    'main',
  );
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
