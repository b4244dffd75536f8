import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockLostError, Serialized, SerializedModule, type SerializedModuleOptions } from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
import { freeLocalPort } from '../support/local-server';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId } from '../support/timing';
import { ADAPTERS, type Adapter } from './http-app';

@Controller('down')
class DownController {
  static runs = 0;

  @Post('work/:id')
  @Serialized('id', { scope: 'down-work' })
  work() {
    DownController.runs++;
    return { ok: true };
  }

  /** A handler that finds its lock lost (as `lock.signal.throwIfAborted()` would) and lets the error escape. */
  @Post('lost/:id')
  @Serialized('id', { scope: 'down-lost' })
  lost(@Param('id') id: string) {
    throw new LockLostError(
      `down-lost:${id}`,
      'its lease could not be renewed: connect ECONNREFUSED 10.20.30.40:6399',
      new Error('connect ECONNREFUSED 10.20.30.40:6399'),
    );
  }
}

async function start(
  adapter: Adapter,
  serialized: SerializedModuleOptions,
): Promise<{ app: INestApplication; url: string; logs: CapturingLogger }> {
  const logs = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [SerializedModule.forRoot(serialized)],
    controllers: [DownController],
  }).compile();
  const app =
    adapter === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: logs })
      : moduleRef.createNestApplication({ logger: logs });
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'), logs };
}

/** The 503 a client gets: that the lock backend is unavailable, and when to retry; nothing about the infrastructure. */
function expectPlain503(
  response: request.Response,
  code: string,
  secrets: (string | RegExp)[],
  message = /lock backend is unavailable/i,
): void {
  expect(response.status).toBe(503);
  expect(response.headers['retry-after']).toMatch(/^\d+$/);
  expect(Object.keys(response.body).sort()).toEqual(['code', 'error', 'message', 'statusCode']);
  expect(response.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable', code });
  expect(response.body.message).toMatch(message);
  const text = response.text;
  for (const secret of [...secrets, /ECONN/i, /\b\d{1,3}(\.\d{1,3}){3}\b/, /redis/i, /postgres/i, /\brole\b/i, /\bsocket\b/i, /lock "/]) {
    if (typeof secret === 'string') expect(text).not.toContain(secret);
    else expect(text).not.toMatch(secret);
  }
}

const REQUESTS = 4;

describe.each(ADAPTERS.map((a) => [a]))('an unavailable lock backend over HTTP (%s)', (adapter: Adapter) => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it(`Redis on a closed port: ${REQUESTS} requests get a plain 503 with Retry-After; the log gets the detail once`, async () => {
    const port = await freeLocalPort();
    const started = await start(adapter, {
      driver: 'redis',
      redis: { url: `redis://:s3cret-pw@127.0.0.1:${port}` },
      connectTimeoutMs: 300,
    });
    app = started.app;
    DownController.runs = 0;
    const ids: string[] = [];
    for (let n = 0; n < REQUESTS; n++) {
      const id = uniqueId('down');
      ids.push(id);
      expectPlain503(await request(started.url).post(`/down/work/${id}`), 'LOCK_BACKEND_UNAVAILABLE', [String(port), id, 's3cret-pw']);
    }
    expect(DownController.runs).toBe(0); // fail closed
    const reported = started.logs.containing('answered 503');
    expect(reported).toHaveLength(1);
    expect(reported[0]).toContain('ECONNREFUSED');
    expect(reported[0]).toContain(`127.0.0.1:${port}`);
    // Not once per request: the provider's own warning and this report, at most (debug lines, one per answer, aside).
    expect(started.logs.lines.filter((l) => l.level !== 'debug' && l.text.includes('ECONNREFUSED')).length).toBeLessThanOrEqual(2);
    expect(started.logs.containing('Answered 503 LOCK_BACKEND_UNAVAILABLE', 'debug')).toHaveLength(REQUESTS);
    expect(started.logs.containing('s3cret-pw')).toEqual([]);
  });

  it(`PostgreSQL with a role that does not exist: ${REQUESTS} requests get a plain 503; the log gets the detail once`, async () => {
    const url = new URL(TEST_DATABASE_URL);
    url.username = 'nosuchrole';
    url.password = 'pw-of-nosuchrole';
    const started = await start(adapter, { driver: 'postgres', postgres: { connectionString: url.toString() }, connectTimeoutMs: 2000 });
    app = started.app;
    DownController.runs = 0;
    for (let n = 0; n < REQUESTS; n++) {
      const id = uniqueId('down');
      expectPlain503(await request(started.url).post(`/down/work/${id}`), 'LOCK_BACKEND_UNAVAILABLE', [
        'nosuchrole',
        id,
        url.port || '5432',
        'pw-of-nosuchrole',
      ]);
    }
    expect(DownController.runs).toBe(0);
    const reported = started.logs.containing('answered 503');
    expect(reported).toHaveLength(1);
    expect(reported[0]).toContain('role "nosuchrole" does not exist');
    expect(started.logs.containing('pw-of-nosuchrole')).toEqual([]);
  });

  it('a LockLostError escaping a handler: a plain 503 with Retry-After, the detail in the log once', async () => {
    const started = await start(adapter, { driver: 'memory' });
    app = started.app;
    for (let n = 0; n < REQUESTS; n++) {
      const id = uniqueId('lost');
      expectPlain503(
        await request(started.url).post(`/down/lost/${id}`),
        'LOCK_LOST',
        ['10.20.30.40', '6399', id],
        /lock of this request was lost/,
      );
    }
    const reported = started.logs.containing('answered 503');
    expect(reported).toHaveLength(1);
    expect(reported[0]).toContain('connect ECONNREFUSED 10.20.30.40:6399');
  });
});
