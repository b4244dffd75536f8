import {
  Catch,
  Controller,
  Get,
  HttpException,
  Injectable,
  Param,
  Post,
  UseGuards,
  type ArgumentsHost,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { SerializedError, SerializedExceptionFilter, type SerializedModuleOptions } from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
import { uniqueId } from '../support/timing';
import { ADAPTERS, type Adapter } from '../e2e/http-app';
import {
  EXPECTED,
  inScenario,
  leaksIn,
  LockErrorsModule,
  LockErrorsService,
  SCENARIOS,
  type Scenario,
} from './support/lock-errors.fixture';

class TeapotError extends Error {}

/** A guard that takes a lock (e.g. a quota check): its lock error comes before any interceptor. */
@Injectable()
class BusyGuard implements CanActivate {
  constructor(private readonly service: LockErrorsService) {}
  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    await this.service.busy(ctx.switchToHttp().getRequest().params.id);
    return true;
  }
}

/** Undecorated handlers: the lock errors come from the service they call. */
@Controller('errors')
class ErrorsController {
  constructor(private readonly service: LockErrorsService) {}

  @Post(':scenario/:id')
  async run(@Param('scenario') scenario: Scenario, @Param('id') id: string) {
    return { result: await inScenario(this.service, scenario, id, (arg) => this.service[scenario](arg)) };
  }

  @Get('guarded/:id')
  @UseGuards(BusyGuard)
  guarded() {
    return { result: 'ran' };
  }

  @Get('teapot')
  teapot() {
    throw new TeapotError('short and stout');
  }

  @Get('http')
  http() {
    throw new HttpException('the app said no', 402);
  }
}

/** The app's own filters, for errors that are not the library's. */
@Catch(TeapotError)
class TeapotFilter implements ExceptionFilter {
  catch(_error: TeapotError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse();
    const send = (status: number, body: object) =>
      typeof response.code === 'function' ? response.code(status).send(body) : response.status(status).json(body);
    send(418, { mine: 'teapot' });
  }
}

@Catch(HttpException)
class AppHttpFilter implements ExceptionFilter {
  catch(error: HttpException, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse();
    const body = { app: 'http', status: error.getStatus() };
    if (typeof response.code === 'function') response.code(error.getStatus()).send(body);
    else response.status(error.getStatus()).json(body);
  }
}

/** With errorMapping: false, the app answers the library's errors itself. */
@Catch(SerializedError)
class AppSerializedFilter implements ExceptionFilter {
  catch(error: SerializedError, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse();
    const body = { app: 'serialized', name: error.name };
    if (typeof response.code === 'function') response.code(409).send(body);
    else response.status(409).json(body);
  }
}

/** A catch-all of the app's: everything it gets becomes a 599; library errors it may hand to the library's filter. */
@Catch()
class CatchAllFilter implements ExceptionFilter {
  constructor(private readonly serialized?: SerializedExceptionFilter) {}
  catch(error: unknown, host: ArgumentsHost) {
    if (this.serialized && error instanceof SerializedError) return this.serialized.catch(error, host);
    const response = host.switchToHttp().getResponse();
    if (typeof response.code === 'function') response.code(599).send({ app: 'all' });
    else response.status(599).json({ app: 'all' });
  }
}

async function start(
  adapter: Adapter,
  options: SerializedModuleOptions = {},
  filters: unknown[] = [TeapotFilter, AppHttpFilter],
  beforeInit: (app: INestApplication) => void = () => undefined,
) {
  const logs = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [LockErrorsModule.forRoot(uniqueId('transport-http'), options)],
    controllers: [ErrorsController],
    providers: filters.map((useClass) => ({ provide: APP_FILTER, useClass: useClass as new () => ExceptionFilter })),
  }).compile();
  const app: INestApplication =
    adapter === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: logs })
      : moduleRef.createNestApplication({ logger: logs });
  beforeInit(app);
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, logs, service: app.get(LockErrorsService), server: app.getHttpServer() };
}

describe.each(ADAPTERS.map((a) => [a]))('lock errors thrown anywhere in an HTTP request (%s)', (adapter: Adapter) => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('answer 400 / 429 / 503 with Retry-After and a stable code from an undecorated handler, never a 500, naming no key or handler', async () => {
    const started = await start(adapter);
    app = started.app;
    for (const scenario of SCENARIOS) {
      const expected = EXPECTED[scenario];
      const id = uniqueId('k');
      const response = await request(started.server).post(`/errors/${scenario}/${id}`);
      expect([scenario, response.status, response.headers['retry-after']]).toEqual([scenario, expected.status, expected.retryAfter]);
      expect(response.body).toEqual({
        statusCode: expected.status,
        error: expect.any(String),
        code: expected.code,
        message: expected.message,
      });
      expect([scenario, leaksIn(response.body, id)]).toEqual([scenario, []]);
      // The detail is the server's: logged at debug level, with the lock key (or, for a bad key, the handler).
      expect(
        started.logs.containing(
          new RegExp(
            `Answered ${expected.status} ${expected.code} \\(http\\): .*${scenario === 'badKey' ? 'LockErrorsService#badKey' : id}`,
          ),
          'debug',
        ),
      ).toHaveLength(1);
      // A second request against the dead backend: the outage is logged once, not per request.
      if (scenario === 'down') expect((await request(started.server).post(`/errors/down/${uniqueId('k')}`)).status).toBe(503);
    }
    expect(started.service.runs).toEqual({ busy: 0, timeout: 0, down: 0, badKey: 0, lost: 0 });
    expect(started.logs.containing('ExceptionsHandler')).toEqual([]);
    expect(started.logs.lines.filter((l) => l.level === 'error').map((l) => l.text)).toEqual([
      // Refused, or not connected within the bound before the refusal was read (a busy host): Redis is down either way.
      expect.stringMatching(
        /^Lock backend unavailable: a request handler answered 503\. LockBackendError: .*(ECONNREFUSED|could not connect within \d+ ms)/,
      ),
      expect.stringMatching(/^Lock backend unavailable: a request handler answered 503\. LockLostError: /),
    ]);
  });

  it('answers a lock error thrown by a guard the same way', async () => {
    const started = await start(adapter);
    app = started.app;
    const id = uniqueId('k');
    const held = await started.service.hold('busy', id);
    try {
      const response = await request(started.server).get(`/errors/guarded/${id}`);
      expect([response.status, response.headers['retry-after'], response.body.code]).toEqual([429, '1', 'LOCK_BUSY']);
    } finally {
      await held?.release();
    }
    expect(started.service.runs.busy).toBe(0);
  });

  it("leaves the app's filters their errors: a filter for its own class and one for HttpException still answer", async () => {
    const started = await start(adapter);
    app = started.app;
    const teapot = await request(started.server).get('/errors/teapot');
    expect([teapot.status, teapot.body]).toEqual([418, { mine: 'teapot' }]);
    const http = await request(started.server).get('/errors/http');
    expect([http.status, http.body]).toEqual([402, { app: 'http', status: 402 }]);
    // ...and an HttpException filter of the app does not take the library's errors.
    const busy = await request(started.server).post(`/errors/busy/${uniqueId('k')}`);
    expect([busy.status, busy.body.code]).toEqual([429, 'LOCK_BUSY']);
  });

  it('errorMapping.body changes what the client receives; status and Retry-After stay', async () => {
    const started = await start(adapter, {
      errorMapping: {
        body: (error, status, defaultBody) => ({ failure: error.name, status, was: (defaultBody as { code: string }).code }),
      },
    });
    app = started.app;
    const response = await request(started.server).post(`/errors/timeout/${uniqueId('k')}`);
    expect([response.status, response.headers['retry-after'], response.body]).toEqual([
      429,
      '1',
      { failure: 'LockTimeoutError', status: 429, was: 'LOCK_TIMEOUT' },
    ]);
  });

  it("an APP_FILTER catch-all of the root module comes after the library's filter: library errors keep their answer", async () => {
    const started = await start(adapter, {}, [CatchAllFilter]);
    app = started.app;
    const busy = await request(started.server).post(`/errors/busy/${uniqueId('k')}`);
    expect([busy.status, busy.body.code]).toEqual([429, 'LOCK_BUSY']);
    const teapot = await request(started.server).get('/errors/teapot');
    expect([teapot.status, teapot.body]).toEqual([599, { app: 'all' }]);
  });

  it('a catch-all given to useGlobalFilters() is tried first: it gets library errors and may hand them to SerializedExceptionFilter', async () => {
    const plain = await start(adapter, {}, [], (nest) => nest.useGlobalFilters(new CatchAllFilter()));
    app = plain.app;
    const taken = await request(plain.server).post(`/errors/busy/${uniqueId('k')}`);
    expect([taken.status, taken.body]).toEqual([599, { app: 'all' }]);
    await plain.app.close();

    const delegating = await start(adapter, {}, [], (nest) =>
      nest.useGlobalFilters(new CatchAllFilter(nest.get(SerializedExceptionFilter))),
    );
    app = delegating.app;
    const busy = await request(delegating.server).post(`/errors/busy/${uniqueId('k')}`);
    expect([busy.status, busy.headers['retry-after'], busy.body.code]).toEqual([429, '1', 'LOCK_BUSY']);
    const teapot = await request(delegating.server).get('/errors/teapot');
    expect([teapot.status, teapot.body]).toEqual([599, { app: 'all' }]);
  });

  it("errorMapping: false leaves the library's errors to the app's filters", async () => {
    const started = await start(adapter, { errorMapping: false }, [AppSerializedFilter]);
    app = started.app;
    const response = await request(started.server).post(`/errors/busy/${uniqueId('k')}`);
    expect([response.status, response.body]).toEqual([409, { app: 'serialized', name: 'LockBusyError' }]);
  });
});
