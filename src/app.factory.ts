import { ValidationPipe, type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AppModule, type AppModuleOptions } from './app.module';
import { loadAppConfig, type AppConfig } from './config/app.config';
import { DigestModule } from './digest/digest.module';
import { ReportsModule } from './reports';
import { TransactionalRewardsModule } from './rewards-tx/transactional-rewards.module';

export interface CreateAppOptions extends Omit<AppModuleOptions, 'config'> {
  /** Overrides of the environment's app settings. */
  config?: Partial<AppConfig>;
  logger?: false | LogLevel[];
  /**
   * Adds the BullMQ reports flow (needs Redis at `REDIS_URL`). Off unless asked for:
   * `main.ts` follows `REPORTS_ENABLED`, the demo turns it on, tests and benchmarks leave it off.
   */
  reports?: boolean;
  /**
   * Adds the nightly digest job (`@OncePerTick` on @nestjs/schedule, `GET /digests`).
   * Off unless asked for: `main.ts` follows `DIGEST_ENABLED`, the demo turns it on.
   */
  digest?: boolean;
}

/**
 * Builds the example app on Express or Fastify (`HTTP_ADAPTER`), initialised and
 * ready for `listen()` or supertest. Used by `main.ts`, the demo, the e2e suites
 * and the benchmarks.
 */
export async function createApp(options: CreateAppOptions = {}): Promise<INestApplication> {
  const config: AppConfig = { ...loadAppConfig(), ...options.config };
  const imports = [...(options.imports ?? [])];
  if (options.reports) {
    imports.push(
      ReportsModule.register({
        connection: { url: config.redisUrl },
        prefix: config.reports.queuePrefix,
        durationMs: config.reports.durationMs,
        concurrency: config.reports.concurrency,
      }),
    );
  }
  if (options.digest) imports.push(DigestModule);
  if (config.transactionalRewards) imports.push(TransactionalRewardsModule.register(config.databaseUrl));
  const module = AppModule.register({ config, serialized: options.serialized, metrics: options.metrics, imports });
  const logger = options.logger ?? ['error', 'warn', 'log'];
  const app =
    config.adapter === 'fastify'
      ? await NestFactory.create(module, new FastifyAdapter(), { logger })
      : await NestFactory.create(module, { logger });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true }));
  await app.init();
  if (config.adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}
