import { IsIn, IsInt, IsOptional, Matches, Max, Min, validateSync } from 'class-validator';
import { SerializedConfigError } from 'nestjs-serialized';
// Not public API: the example app lives in this repository and validates the library's
// variables together with its own, so one start-up message lists every bad variable.
import { resolveSerializedOptions } from 'nestjs-serialized/config/serialized-options.resolver';

/** What each variable of the example app accepts (the start-up error quotes it). */
export const APP_ENV_ACCEPTS = {
  PORT: 'an integer from 1 to 65535 (default 3000)',
  HTTP_ADAPTER: 'express or fastify (default express)',
  APP_STORE: 'memory, redis or postgres (default: the lock driver, SERIALIZED_DRIVER)',
  REWARD_TASK_MS: 'an integer number of milliseconds from 0 to 60000 (default 200)',
  RESOURCE_TASK_MS: 'an integer number of milliseconds from 0 to 60000 (default 50)',
  PAYMENT_TASK_MS: 'an integer number of milliseconds from 0 to 60000 (default 100)',
  REPORTS_ENABLED: 'true or false (default true): the BullMQ reports flow, which needs Redis at REDIS_URL',
  REPORT_DURATION_MS: 'an integer number of milliseconds from 0 to 600000 (default 3000)',
  REPORTS_CONCURRENCY: 'an integer from 1 to 100 (default 4)',
  TX_REWARDS_ENABLED:
    'true or false (default false): the daily reward in transaction mode (docs/transactions.md: TypeORM, PostgreSQL at DATABASE_URL, POST /tx/users/:userId/rewards/daily)',
  REPORTS_QUEUE_PREFIX: '1 to 64 characters of A-Z a-z 0-9 _ . : - { } (default bull)',
  DIGEST_ENABLED: 'true or false (default true): the nightly digest job (@OncePerTick on @nestjs/schedule, GET /digests)',
  DIGEST_CRON: 'a cron expression of 5 or 6 fields, seconds first when 6 (default 0 0 3 * * *: every night at 03:00)',
  ADMIN_LOCKS_TOKEN:
    '16 to 256 characters without spaces: GET /admin/locks/:key answers requests whose x-admin-token header equals it (default unset: the route does not exist)',
} as const;

class AppEnvironment {
  @IsOptional() @IsInt() @Min(1) @Max(65535) PORT?: number;
  @IsOptional() @IsIn(['express', 'fastify']) HTTP_ADAPTER?: 'express' | 'fastify';
  @IsOptional() @IsIn(['memory', 'redis', 'postgres']) APP_STORE?: 'memory' | 'redis' | 'postgres';
  @IsOptional() @IsInt() @Min(0) @Max(60000) REWARD_TASK_MS?: number;
  @IsOptional() @IsInt() @Min(0) @Max(60000) RESOURCE_TASK_MS?: number;
  @IsOptional() @IsInt() @Min(0) @Max(60000) PAYMENT_TASK_MS?: number;
  @IsOptional() @IsIn(['true', 'false']) REPORTS_ENABLED?: 'true' | 'false';
  @IsOptional() @IsInt() @Min(0) @Max(600000) REPORT_DURATION_MS?: number;
  @IsOptional() @IsInt() @Min(1) @Max(100) REPORTS_CONCURRENCY?: number;
  @IsOptional() @Matches(/^[A-Za-z0-9_.:{}-]{1,64}$/) REPORTS_QUEUE_PREFIX?: string;
  @IsOptional() @IsIn(['true', 'false']) TX_REWARDS_ENABLED?: 'true' | 'false';
  @IsOptional() @IsIn(['true', 'false']) DIGEST_ENABLED?: 'true' | 'false';
  @IsOptional() @Matches(/^\S+(\s+\S+){4,5}$/) DIGEST_CRON?: string;
  @IsOptional() @Matches(/^\S{16,256}$/) ADMIN_LOCKS_TOKEN?: string;
}

const NUMERIC = new Set(['PORT', 'REWARD_TASK_MS', 'RESOURCE_TASK_MS', 'PAYMENT_TASK_MS', 'REPORT_DURATION_MS', 'REPORTS_CONCURRENCY']);

/** The example app's own settings (the library reads its SERIALIZED_* variables itself). */
export interface AppConfig {
  port: number;
  adapter: 'express' | 'fastify';
  store: 'memory' | 'redis' | 'postgres';
  rewardTaskMs: number;
  resourceTaskMs: number;
  /** The "slow step" of a payment (`POST /accounts/:accountId/payments`). */
  paymentTaskMs: number;
  redisUrl: string;
  databaseUrl: string;
  /** The BullMQ reports flow (`POST /users/:userId/reports`, `GET /jobs/:id`). */
  reports: { enabled: boolean; durationMs: number; concurrency: number; queuePrefix: string };
  /** The daily reward in transaction mode (`POST /tx/users/:userId/rewards/daily`, PostgreSQL at `databaseUrl`). */
  transactionalRewards: boolean;
  /** The nightly digest job (`GET /digests`); its schedule is read by the job itself (`DIGEST_CRON`). */
  digest: { enabled: boolean; cron: string };
  /** `GET /admin/locks/:key` (`lockService.inspect`) for requests carrying it in `x-admin-token`; unset: no such route. */
  adminLocksToken?: string;
}

/** Reads and validates the app's variables; a bad value stops start-up naming every bad variable. */
export function loadAppConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const values = new AppEnvironment() as unknown as Record<string, unknown>;
  for (const name of Object.keys(APP_ENV_ACCEPTS)) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') continue;
    values[name] = NUMERIC.has(name) && /^\d{1,9}$/.test(raw) ? Number(raw) : raw;
  }
  const problems = validateSync(values, { forbidUnknownValues: false }).map(
    (e) =>
      `${e.property}=${JSON.stringify(String(e.value))} is invalid: accepts ${APP_ENV_ACCEPTS[e.property as keyof typeof APP_ENV_ACCEPTS]}`,
  );
  // The library checks its own variables when it starts; checking them here too
  // puts every bad variable, the app's and the library's, in one message.
  try {
    resolveSerializedOptions({}, env);
  } catch (error) {
    if (!(error instanceof SerializedConfigError)) throw error;
    problems.push(...error.problems);
  }
  if (problems.length) throw new Error(`Invalid environment for the example app:\n  - ${problems.join('\n  - ')}`);
  const env_ = values as unknown as AppEnvironment;
  const driver = env.SERIALIZED_DRIVER?.trim();
  return {
    port: env_.PORT ?? 3000,
    adapter: env_.HTTP_ADAPTER ?? 'express',
    store: env_.APP_STORE ?? (driver === 'redis' || driver === 'postgres' ? driver : 'memory'),
    rewardTaskMs: env_.REWARD_TASK_MS ?? 200,
    resourceTaskMs: env_.RESOURCE_TASK_MS ?? 50,
    paymentTaskMs: env_.PAYMENT_TASK_MS ?? 100,
    redisUrl: env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
    databaseUrl: env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres',
    reports: {
      enabled: env_.REPORTS_ENABLED !== 'false',
      durationMs: env_.REPORT_DURATION_MS ?? 3000,
      concurrency: env_.REPORTS_CONCURRENCY ?? 4,
      queuePrefix: env_.REPORTS_QUEUE_PREFIX ?? 'bull',
    },
    transactionalRewards: env_.TX_REWARDS_ENABLED === 'true',
    digest: { enabled: env_.DIGEST_ENABLED !== 'false', cron: env_.DIGEST_CRON ?? '0 0 3 * * *' },
    ...(env_.ADMIN_LOCKS_TOKEN ? { adminLocksToken: env_.ADMIN_LOCKS_TOKEN } : {}),
  };
}

export const APP_CONFIG = 'APP_CONFIG';
