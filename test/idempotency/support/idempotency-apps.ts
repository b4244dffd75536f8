import type { INestApplication, LoggerService } from '@nestjs/common';
import type { SerializedModuleOptions } from 'nestjs-serialized';
import { createApp } from '../../../src/app.factory';
import type { Adapter } from '../../e2e/http-app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../support/services';
import { IdempotencyFixturesModule, IdempotencyProbe } from './idempotency-fixtures';

export type Driver = 'memory' | 'redis' | 'postgres';
export const DRIVERS: Driver[] = ['memory', 'redis', 'postgres'];

export interface RunningApp {
  readonly app: INestApplication;
  readonly url: string;
  readonly probe: IdempotencyProbe;
}

/** Library options for `driver`, sharing one backend under `keyPrefix`. */
export function serializedOptions(driver: Driver, keyPrefix: string, extra: SerializedModuleOptions = {}): SerializedModuleOptions {
  switch (driver) {
    case 'memory':
      return { driver, keyPrefix, ...extra };
    case 'redis':
      return { driver, keyPrefix, redis: { url: TEST_REDIS_URL }, ...extra };
    case 'postgres':
      return { driver, keyPrefix, postgres: { connectionString: TEST_DATABASE_URL }, ...extra };
  }
}

/** The example app plus the idempotency fixtures, listening on an ephemeral port. */
export async function startIdempotencyApp(
  adapter: Adapter,
  serialized: SerializedModuleOptions,
  logger: false | LoggerService = false,
): Promise<RunningApp> {
  const app = await createApp({
    config: { adapter, store: 'memory', paymentTaskMs: 30 },
    serialized,
    imports: [IdempotencyFixturesModule],
    logger: false,
  });
  if (logger) app.useLogger(logger);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return { app, url, probe: app.get(IdempotencyProbe) };
}
