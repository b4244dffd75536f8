import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createPool } from 'mysql2';
import request from 'supertest';
import {
  LockProvider,
  MysqlLockProvider,
  Serialized,
  SerializedConfigError,
  SerializedModule,
  type SerializedModuleOptions,
} from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
import { freeLocalPort } from '../support/local-server';
import { TEST_MYSQL_URL } from '../support/services';
import { sleep, uniqueId } from '../support/timing';
import { uniquePrefix } from './support/mysql-inspect';

@Controller('my')
class CounterController {
  static inside = 0;
  static maxInside = 0;
  static runs = 0;

  @Post('count/:id')
  @Serialized('id', { scope: 'my-count' })
  async count(@Param('id') id: string) {
    CounterController.inside++;
    CounterController.maxInside = Math.max(CounterController.maxInside, CounterController.inside);
    await sleep(5);
    CounterController.runs++;
    CounterController.inside--;
    return { id };
  }
}

async function start(serialized?: SerializedModuleOptions): Promise<{ app: INestApplication; url: string; logs: CapturingLogger }> {
  const logs = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [SerializedModule.forRoot(serialized)],
    controllers: [CounterController],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: logs });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'), logs };
}

/** `driver: 'mysql'` through SerializedModule: configuration, HTTP, and failing closed. */
describe("SerializedModule with driver 'mysql'", () => {
  const saved = { ...process.env };
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    process.env = { ...saved };
  });

  it('reads SERIALIZED_DRIVER=mysql and MYSQL_URL, and serializes concurrent requests of one key over HTTP', async () => {
    process.env.SERIALIZED_DRIVER = 'mysql';
    process.env.MYSQL_URL = TEST_MYSQL_URL;
    process.env.SERIALIZED_KEY_PREFIX = uniquePrefix('http');
    const started = await start();
    app = started.app;
    expect(app.get(LockProvider)).toBeInstanceOf(MysqlLockProvider);
    expect(started.logs.containing('driver=mysql at mysql://')).toHaveLength(1);
    CounterController.runs = CounterController.maxInside = 0;
    const id = uniqueId('acct');
    const responses = await Promise.all(Array.from({ length: 12 }, () => request(started.url).post(`/my/count/${id}`)));
    expect(responses.map((r) => r.status)).toEqual(Array(12).fill(201));
    expect(CounterController.runs).toBe(12);
    expect(CounterController.maxInside).toBe(1);
  }, 30_000);

  it("takes the app's mysql2 pool for its settings, opens its own sessions, and never ends the app's pool", async () => {
    const url = new URL(TEST_MYSQL_URL);
    const pool = createPool({
      host: url.hostname,
      port: Number(url.port || 3306),
      user: decodeURIComponent(url.username),
      database: url.pathname.slice(1),
    });
    try {
      const started = await start({ driver: 'mysql', mysql: { pool }, keyPrefix: uniquePrefix('pool') });
      app = started.app;
      expect(started.logs.containing("(the app's pool, user")).toHaveLength(1);
      const id = uniqueId('acct');
      CounterController.runs = 0;
      const responses = await Promise.all(Array.from({ length: 4 }, () => request(started.url).post(`/my/count/${id}`)));
      expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 201]);
      await app.close();
      app = undefined;
      // The app's pool still works after the app closed.
      const rows = await new Promise<unknown>((resolve, reject) =>
        pool.query('SELECT 1 AS one', (error, result) => (error ? reject(error) : resolve(result))),
      );
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await new Promise<void>((resolve) => pool.end(() => resolve()));
    }
  }, 30_000);

  it('a dead port: every request gets a plain 503 and the handler never runs; no password anywhere', async () => {
    const port = await freeLocalPort();
    const started = await start({ driver: 'mysql', mysql: { url: `mysql://app:my-s3cret@127.0.0.1:${port}/test` }, connectTimeoutMs: 300 });
    app = started.app;
    CounterController.runs = 0;
    for (let n = 0; n < 3; n++) {
      const response = await request(started.url).post(`/my/count/${uniqueId('down')}`);
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({ statusCode: 503, code: 'LOCK_BACKEND_UNAVAILABLE' });
      expect(response.text).not.toMatch(new RegExp(`my-s3cret|${port}|mysql`, 'i'));
    }
    expect(CounterController.runs).toBe(0);
    expect(started.logs.containing('answered 503').length).toBeGreaterThanOrEqual(1);
    expect(started.logs.containing('my-s3cret')).toEqual([]);
  }, 30_000);

  it('credentials the server refuses: every request gets a plain 503 and the handler never runs; the password in no log line', async () => {
    const target = new URL(TEST_MYSQL_URL);
    const url = `mysql://nsz_nobody:my-s3cret@${target.hostname}:${target.port || 3306}${target.pathname}`;
    const started = await start({ driver: 'mysql', mysql: { url }, keyPrefix: uniquePrefix('denied') });
    app = started.app;
    CounterController.runs = 0;
    for (let n = 0; n < 2; n++) {
      const response = await request(started.url).post(`/my/count/${uniqueId('denied')}`);
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({ statusCode: 503, code: 'LOCK_BACKEND_UNAVAILABLE' });
      expect(response.text).not.toMatch(/my-s3cret|nsz_nobody|denied|mysql/i);
    }
    expect(CounterController.runs).toBe(0);
    // The server log says why (the server's refusal), never with the password.
    expect(started.logs.containing('Access denied').length).toBeGreaterThanOrEqual(1);
    expect(started.logs.containing('my-s3cret')).toEqual([]);
  }, 30_000);

  it('stops start-up without MYSQL_URL, and names a bad one with its password redacted', async () => {
    process.env.SERIALIZED_DRIVER = 'mysql';
    delete process.env.MYSQL_URL;
    const missing = (await Test.createTestingModule({ imports: [SerializedModule.forRoot()] })
      .compile()
      .catch((e) => e)) as SerializedConfigError;
    expect(missing).toBeInstanceOf(SerializedConfigError);
    expect(missing.message).toContain('MYSQL_URL is required with the mysql driver (or pass mysql.url or mysql.pool)');

    process.env.MYSQL_URL = 'postgres://app:pw-leak@db:5432/x';
    const bad = (await Test.createTestingModule({ imports: [SerializedModule.forRoot()] })
      .compile()
      .catch((e) => e)) as SerializedConfigError;
    expect(bad).toBeInstanceOf(SerializedConfigError);
    expect(bad.message).toContain('MYSQL_URL="postgres://app:***@db:5432/x" is invalid: accepts a mysql:// URL');
    expect(bad.message).not.toContain('pw-leak');

    // Another driver leaves MYSQL_URL alone (it may serve the app itself).
    process.env.SERIALIZED_DRIVER = 'memory';
    const moduleRef = await Test.createTestingModule({ imports: [SerializedModule.forRoot()] }).compile();
    await moduleRef.close();
  });
});
