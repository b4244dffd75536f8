import { Controller, Get, Module, Query, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { LockService, SerializedHealthIndicator, SerializedModule, type SerializedModuleOptions } from 'nestjs-serialized';
import request from 'supertest';
import { Cluster } from 'ioredis';
import { databaseTarget } from '../postgres/support/provider-set';
import { TcpProxy } from '../postgres/support/tcp-proxy';
import { ThrowawayRedis } from '../redis/support/throwaway-redis';
import { TEST_DATABASE_URL, TEST_MYSQL_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

/**
 * An "up" answer is asserted with a generous bound: on a busy host the first ping of a
 * fresh app (connecting included) can take longer than 500 ms; the bound itself is
 * what the "down" cases test.
 */
const UP = '/health?timeoutMs=10000';

/** A feature module of its own: the indicator is injected outside the module that registers it. */
@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly serialized: SerializedHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(@Query('timeoutMs') timeoutMs?: string) {
    return this.health.check([() => this.serialized.isHealthy('locks', { timeoutMs: timeoutMs ? Number(timeoutMs) : 500 })]);
  }
}

@Module({ imports: [TerminusModule.forRoot({ logger: false })], controllers: [HealthController] })
class HealthModule {}

async function startHealthApp(serialized: SerializedModuleOptions): Promise<INestApplication> {
  @Module({ imports: [SerializedModule.forRoot(serialized), HealthModule] })
  class RootModule {}
  const app = await NestFactory.create(RootModule, { logger: false });
  await app.init();
  return app;
}

describe('SerializedHealthIndicator through @nestjs/terminus (real HTTP)', () => {
  let app: INestApplication | undefined;
  let redis: ThrowawayRedis | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await redis?.kill();
    redis = undefined;
  });

  const backends: Array<[string, () => SerializedModuleOptions]> = [
    ['memory', () => ({ driver: 'memory' })],
    ['redis', () => ({ driver: 'redis', redis: { url: TEST_REDIS_URL }, keyPrefix: uniqueId('health') })],
    ['postgres', () => ({ driver: 'postgres', postgres: { connectionString: TEST_DATABASE_URL }, keyPrefix: uniqueId('health') })],
  ];

  it.each(backends)('is up on %s', async (driver, options) => {
    app = await startHealthApp(options());
    const response = await request(app.getHttpServer()).get(UP).expect(200);
    expect(response.body.status).toBe('ok');
    expect(response.body.info.locks).toEqual({ status: 'up', driver });
  });

  it("is up on a Redis Cluster through the app's own client, which it leaves open", async () => {
    const nodes = process.env.TEST_REDIS_CLUSTER_NODES;
    if (!nodes) throw new Error('TEST_REDIS_CLUSTER_NODES is not set: the jest global set-up starts the test cluster');
    const client = new Cluster(nodes.split(',').map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) })));
    try {
      app = await startHealthApp({ driver: 'redis', redis: { client }, keyPrefix: uniqueId('health') });
      const response = await request(app.getHttpServer()).get(UP).expect(200);
      expect(response.body.info.locks).toEqual({ status: 'up', driver: 'redis' });
      await app.close();
      app = undefined;
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  it('is down (503) once its Redis is killed, and up again when it returns; the reason never shows the password', async () => {
    redis = await ThrowawayRedis.create(['--requirepass', 'hunter2secret']);
    await redis.start();
    app = await startHealthApp({
      driver: 'redis',
      redis: { url: `redis://:hunter2secret@127.0.0.1:${redis.port}` },
      keyPrefix: uniqueId('health'),
      connectTimeoutMs: 5000,
    });
    await request(app.getHttpServer()).get(UP).expect(200);

    await redis.kill();
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error.locks.status).toBe('down');
    expect(down.body.error.locks.driver).toBe('redis');
    expect(typeof down.body.error.locks.message).toBe('string');
    expect(JSON.stringify(down.body)).not.toContain('hunter2secret');
    // The reason, not where: no host or port either.
    expect(JSON.stringify(down.body)).not.toContain('127.0.0.1');
    expect(JSON.stringify(down.body)).not.toContain(`:${redis.port}`);

    await redis.start();
    // The client reconnects on its own; the indicator reports what it finds.
    let status = 0;
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = (await request(app.getHttpServer()).get('/health')).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
  });

  it('is down with the bound as reason when Redis hangs (SIGSTOP), long before the connect timeout', async () => {
    redis = await ThrowawayRedis.create();
    await redis.start();
    app = await startHealthApp({
      driver: 'redis',
      redis: { url: redis.url },
      keyPrefix: uniqueId('health'),
      // Far beyond the indicator's 500 ms: a down answer can only come from the indicator's own bound.
      connectTimeoutMs: 60_000,
    });
    await request(app.getHttpServer()).get(UP).expect(200);
    redis.pause();
    try {
      const down = await request(app.getHttpServer()).get('/health').expect(503);
      expect(down.body.error.locks).toEqual({ status: 'down', driver: 'redis', message: 'Redis did not answer within 500 ms' });
    } finally {
      redis.resume();
    }
  });

  it('is down with the bound as reason when the path to PostgreSQL goes dark (a proxy the test controls)', async () => {
    const proxy = new TcpProxy(databaseTarget());
    await proxy.start();
    try {
      app = await startHealthApp({
        driver: 'postgres',
        postgres: { connectionString: proxy.url(TEST_DATABASE_URL) },
        keyPrefix: uniqueId('health'),
        connectTimeoutMs: 1000,
      });
      // Opens a lock session and leaves it idle in the pool: the next check reuses it.
      await request(app.getHttpServer()).get(UP).expect(200);
      proxy.blackhole();
      const down = await request(app.getHttpServer()).get('/health').expect(503);
      expect(down.body.error.locks).toEqual({ status: 'down', driver: 'postgres', message: 'PostgreSQL did not answer within 500 ms' });
      await app.close();
      app = undefined;
    } finally {
      await proxy.stop();
    }
  });

  it('is up on PostgreSQL while every lock session holds a lock (a full pool is load, not an outage)', async () => {
    app = await startHealthApp({
      driver: 'postgres',
      postgres: { connectionString: TEST_DATABASE_URL, lockPoolSize: 1 },
      keyPrefix: uniqueId('health'),
    });
    const locks = app.get(LockService);
    let releaseHolder!: () => void;
    const holding = new Promise<void>((resolve) => (releaseHolder = resolve));
    const held = new Promise<void>((resolve) => {
      void locks.run('busy:1', async () => {
        resolve();
        await holding;
      });
    });
    await held;
    try {
      const response = await request(app.getHttpServer()).get(UP).expect(200);
      expect(response.body.info.locks).toEqual({ status: 'up', driver: 'postgres' });
    } finally {
      releaseHolder();
    }
  });

  it('is down when PostgreSQL cannot be reached, with the password redacted', async () => {
    // A port nobody listens on: connecting is refused at once.
    const { freeLocalPort } = await import('../support/local-server');
    const port = await freeLocalPort();
    app = await startHealthApp({
      driver: 'postgres',
      postgres: { connectionString: `postgres://postgres:pgsecretpw@127.0.0.1:${port}/test` },
      keyPrefix: uniqueId('health'),
    });
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.error.locks.status).toBe('down');
    expect(down.body.error.locks.driver).toBe('postgres');
    expect(JSON.stringify(down.body)).not.toContain('pgsecretpw');
    // The reason, not where: no host or port either.
    expect(JSON.stringify(down.body)).not.toContain(`127.0.0.1`);
    expect(JSON.stringify(down.body)).not.toContain(`:${port}`);
  });
  it('is up on MySQL, and names the driver', async () => {
    app = await startHealthApp({ driver: 'mysql', mysql: { url: TEST_MYSQL_URL }, keyPrefix: uniqueId('health') });
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.locks).toEqual({ status: 'up', driver: 'mysql' });
  });

  it('is down when MySQL cannot be reached, with the password, host and port kept out of the reason', async () => {
    const { freeLocalPort } = await import('../support/local-server');
    const port = await freeLocalPort();
    app = await startHealthApp({
      driver: 'mysql',
      mysql: { url: `mysql://root:mysqlsecretpw@127.0.0.1:${port}/test` },
      keyPrefix: uniqueId('health'),
    });
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.error.locks).toMatchObject({ status: 'down', driver: 'mysql' });
    expect(JSON.stringify(down.body)).not.toContain('mysqlsecretpw');
    expect(JSON.stringify(down.body)).not.toContain('127.0.0.1');
    expect(JSON.stringify(down.body)).not.toContain(`:${port}`);
  });
});
