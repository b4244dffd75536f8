/**
 * An app on the in-memory driver that uses `@Serialized` on a service method:
 * reports over IPC which optional peers ended up loaded (none should be).
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Serialized, SerializedModule } from 'nestjs-serialized';

@Injectable()
class Greeter {
  @Serialized('userId')
  async greet(input: { userId: string }): Promise<string> {
    return `hello ${input.userId}`;
  }
}

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], providers: [Greeter] })
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const greeting = await app.get(Greeter).greet({ userId: 'u1' });
  await app.close();
  const loaded = Object.keys(require.cache)
    .map(
      (file) =>
        /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ??
        (/\/src\/bullmq\/(serialized-job\.runner|job-order\.\w+)\./.test(file) ? 'nestjs-serialized/bullmq-runner' : undefined),
    )
    .filter((name): name is string => name !== undefined);
  process.send?.({ type: 'loaded', greeting, modules: [...new Set(loaded)] });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
