import { Module, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SerializedModule, type SerializedModuleOptions } from 'nestjs-serialized';
import { ThrowawayRedis } from '../redis/support/throwaway-redis';
import { uniqueId } from '../support/timing';

/** Every line the app logs, with its context. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown, context?: string): void {
    this.lines.push(`[${context}] ${String(message)}`);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.lines.push(`ERROR ${String(message)} ${rest.join(' ')}`);
  }
  warn(message: unknown, context?: string): void {
    this.lines.push(`WARN [${context}] ${String(message)}`);
  }
}

async function startupLines(serialized: SerializedModuleOptions): Promise<string[]> {
  @Module({ imports: [SerializedModule.forRoot(serialized)] })
  class RootModule {}
  const logger = new CapturingLogger();
  const app = await NestFactory.create(RootModule, { logger });
  await app.init();
  await app.close();
  return logger.lines;
}

describe('the start-up line', () => {
  let redis: ThrowawayRedis | undefined;

  afterEach(async () => {
    await redis?.kill();
    redis = undefined;
  });

  it('names the Redis address with its password redacted and the key prefix, once', async () => {
    redis = await ThrowawayRedis.create(['--requirepass', 'S3cr3t-pw']);
    await redis.start();
    const keyPrefix = uniqueId('startup');
    const lines = await startupLines({ driver: 'redis', redis: { url: `redis://:S3cr3t-pw@127.0.0.1:${redis.port}/0` }, keyPrefix });
    const startup = lines.filter((line) => line.includes('driver='));
    expect(startup).toEqual([`[nestjs-serialized] driver=redis at redis://:***@127.0.0.1:${redis.port}/0, key prefix "${keyPrefix}"`]);
    expect(lines.join('\n')).not.toContain('S3cr3t-pw');
  });

  it('names the PostgreSQL address with its password redacted and the key prefix, once', async () => {
    const keyPrefix = uniqueId('startup');
    // The test server trusts local connections: the password is never checked, only printed (it must not be).
    const lines = await startupLines({
      driver: 'postgres',
      postgres: { connectionString: 'postgres://postgres:pg-S3cr3t@127.0.0.1:5432/test' },
      keyPrefix,
    });
    const startup = lines.filter((line) => line.includes('driver='));
    expect(startup).toEqual([
      `[nestjs-serialized] driver=postgres at postgres://postgres:***@127.0.0.1:5432/test, key prefix "${keyPrefix}"`,
    ]);
    expect(lines.join('\n')).not.toContain('pg-S3cr3t');
  });

  it('says so when the locks live in this process only', async () => {
    const lines = await startupLines({ driver: 'memory' });
    expect(lines.filter((line) => line.includes('driver='))).toEqual(['[nestjs-serialized] driver=memory (locks in this process only)']);
  });
});
