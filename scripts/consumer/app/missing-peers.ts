/**
 * Run by the consumer test in the app that has only the required peers: each
 * feature whose optional peer is not installed must stop start-up with one
 * SerializedConfigError naming what needs it, the package and its install command.
 * Prints one line per feature; exits 1 if any started or failed otherwise.
 */
import 'reflect-metadata';
import { Controller, Injectable, Module, Param, Post, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Serialized, SerializedConfigError, SerializedHealthIndicator, SerializedJobs, SerializedModule } from 'nestjs-serialized';

@Module({ imports: [SerializedModule.forRoot({ driver: 'redis', redis: { url: 'redis://127.0.0.1:6379' } })] })
class RedisApp {}

@Module({
  imports: [
    SerializedModule.forRoot({ driver: 'postgres', postgres: { connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' } }),
  ],
})
class PostgresApp {}

@Module({ imports: [SerializedModule.forRoot({ driver: 'mysql', mysql: { url: 'mysql://root@127.0.0.1:3306/test' } })] })
class MysqlApp {}

@Injectable()
@SerializedJobs({ recheckMs: 1000 })
class ReportsProcessor {
  @Serialized('data.userId')
  async process(job: { data: { userId: string } }): Promise<string> {
    return job.data.userId;
  }
}

@Module({ imports: [SerializedModule.forRoot()], providers: [ReportsProcessor] })
class BullmqApp {}

@Injectable()
class HealthService {
  constructor(readonly indicator: SerializedHealthIndicator) {}
}

@Module({ imports: [SerializedModule.forRoot()], providers: [HealthService] })
class TerminusApp {}

@Module({ imports: [SerializedModule.forRoot({ metrics: 'on' })] })
class MetricsApp {}

@Controller()
class ClaimsController {
  @Post(':userId')
  @Serialized('userId', { transaction: true })
  claim(@Param('userId') userId: string): string {
    return userId;
  }
}

@Module({ imports: [SerializedModule.forRoot()], controllers: [ClaimsController] })
class TransactionApp {}

const CASES: [string, Type, string][] = [
  ['ioredis', RedisApp, "driver 'redis' needs the optional peer dependency ioredis: npm install ioredis"],
  ['pg', PostgresApp, "driver 'postgres' needs the optional peer dependency pg: npm install pg"],
  ['mysql2', MysqlApp, "driver 'mysql' needs the optional peer dependency mysql2: npm install mysql2"],
  [
    'bullmq',
    BullmqApp,
    '@Serialized on the BullMQ processor ReportsProcessor needs the optional peer dependency bullmq: npm install bullmq @nestjs/bullmq',
  ],
  [
    '@nestjs/terminus',
    TerminusApp,
    'SerializedHealthIndicator (injected into HealthService) needs the optional peer dependency @nestjs/terminus: npm install @nestjs/terminus',
  ],
  [
    '@nestjs-cls/transactional',
    TransactionApp,
    '@Serialized(…, { transaction }) on ClaimsController#claim needs the optional peer dependency @nestjs-cls/transactional: npm install @nestjs-cls/transactional nestjs-cls',
  ],
  ['@opentelemetry/api', MetricsApp, "metrics: 'on' needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api"],
];

async function main(): Promise<void> {
  let failed = 0;
  for (const [peer, app, problem] of CASES) {
    let outcome: string;
    try {
      const context = await NestFactory.createApplicationContext(app, { logger: false, abortOnError: false });
      await context.close();
      outcome = 'started';
    } catch (error) {
      const ok = error instanceof SerializedConfigError && error.problems.length === 1 && error.problems[0] === problem;
      outcome = ok ? 'SerializedConfigError as expected' : `${(error as Error).name}: ${(error as Error).message}`;
    }
    if (outcome !== 'SerializedConfigError as expected') failed++;
    console.log(`${peer}: ${outcome}`);
  }
  process.exit(failed ? 1 : 0);
}

void main();
