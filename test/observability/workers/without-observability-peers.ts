/**
 * An app on the in-memory driver in a process where `@opentelemetry/api` and
 * `@nestjs/terminus` cannot be resolved: reports over IPC what worked and which
 * optional peers were loaded.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, Serialized, SerializedHealthIndicator, SerializedModule } from 'nestjs-serialized';

@Injectable()
class Greeter {
  @Serialized('userId')
  async greet(input: { userId: string }): Promise<string> {
    return `hello ${input.userId}`;
  }
}

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], providers: [Greeter] })
class AppModule {}

/** A class that injects the indicator: without terminus, start-up must fail. */
@Injectable()
class HealthService {
  constructor(readonly indicator: SerializedHealthIndicator) {}
}

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], providers: [HealthService] })
class HealthModule {}

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory', metrics: 'on' })] })
class MetricsModule {}

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory', tracing: 'on' })] })
class TracingModule {}

/** How start-up of `module` ended: `started`, or the error's name and message. */
async function startUp(module: new () => object): Promise<string> {
  try {
    const app = await NestFactory.createApplicationContext(module, { logger: false, abortOnError: false });
    await app.close();
    return 'started';
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

function resolvable(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const greeting = await app.get(Greeter).greet({ userId: 'u1' });
  const ran = await app.get(LockService).run('wallet:1', () => 'ran');
  const health = await app
    .get(SerializedHealthIndicator)
    .isHealthy('locks')
    .then(
      () => 'resolved',
      (error: Error) => error.message,
    );
  await app.close();
  const startUps = { health: await startUp(HealthModule), metrics: await startUp(MetricsModule), tracing: await startUp(TracingModule) };
  const loaded = Object.keys(require.cache)
    .map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1])
    .filter((name): name is string => name !== undefined);
  process.send?.({
    type: 'loaded',
    greeting,
    ran,
    health,
    startUps,
    resolvable: { otel: resolvable('@opentelemetry/api'), terminus: resolvable('@nestjs/terminus') },
    modules: [...new Set(loaded)],
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
