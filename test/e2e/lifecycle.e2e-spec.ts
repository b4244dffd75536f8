import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockBackendError, LockProvider, LockService, SerializedModule, Serialized, type Lock } from 'nestjs-serialized';
import { deferred, sleep, uniqueId, waitFor } from '../support/timing';
import { ADAPTERS, type Adapter } from './http-app';

/** Handlers whose running can be held open from the test. */
@Controller('life')
class LifeController {
  static gate = deferred();
  static runs: string[] = [];

  @Post('hold/:id')
  @Serialized('id')
  async hold(@Param('id') id: string) {
    LifeController.runs.push(id);
    await LifeController.gate.promise;
    return { id };
  }
}

/** A backend that cannot be reached. */
class UnreachableProvider extends LockProvider {
  async acquire(key: string): Promise<Lock> {
    throw new LockBackendError('connect ECONNREFUSED 127.0.0.1:1', { key });
  }
  async tryAcquire(key: string): Promise<Lock | null> {
    throw new LockBackendError('connect ECONNREFUSED 127.0.0.1:1', { key });
  }
  async close(): Promise<void> {}
}

async function start(adapter: Adapter, override?: LockProvider): Promise<{ app: INestApplication; url: string }> {
  const builder = Test.createTestingModule({
    imports: [SerializedModule.forRoot({ driver: 'memory', shutdownGraceMs: 5000 })],
    controllers: [LifeController],
  });
  if (override) builder.overrideProvider(LockProvider).useValue(override);
  const moduleRef = await builder.compile();
  const app = adapter === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter()) : moduleRef.createNestApplication();
  app.useLogger(false);
  await app.init();
  if (adapter === 'fastify') await app.getHttpAdapter().getInstance().ready();
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1') };
}

describe.each(ADAPTERS.map((a) => [a]))('lifecycle and failure (%s)', (adapter: Adapter) => {
  beforeEach(() => {
    LifeController.gate = deferred();
    LifeController.runs = [];
  });

  it('fails closed: an unreachable backend answers 503 and the handler never runs', async () => {
    const { app, url } = await start(adapter, new UnreachableProvider());
    try {
      const response = await request(url).post('/life/hold/x');
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body.code).toBe('LOCK_BACKEND_UNAVAILABLE');
      // The client learns that the backend is unavailable, not where it is (the detail is in the server log).
      expect(response.body.message).toBe('The lock backend is unavailable; retry later');
      expect(LifeController.runs).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('app.close(): the running handler finishes, waiters get 503, then the app is closed', async () => {
    const { app, url } = await start(adapter);
    const id = uniqueId('close');
    const holder = request(url)
      .post(`/life/hold/${id}`)
      .then((r) => r);
    await waitFor(() => LifeController.runs.includes(id), 5000, 'the holder to run');
    const waiter = request(url)
      .post(`/life/hold/${id}`)
      .then((r) => r);
    await waitFor(
      async () => (await app.get(LockService).inspect(`LifeController.hold:${id}`)).waitingHere === 1,
      5000,
      'the waiter to wait',
    );
    let closed = false;
    const closing = app.close().then(() => (closed = true));
    expect((await waiter).status).toBe(503);
    await sleep(100);
    expect(closed).toBe(false); // held open by the running handler
    LifeController.gate.resolve();
    expect((await holder).status).toBe(201);
    await closing;
    expect(LifeController.runs).toEqual([id]);
  });
});

describe('no global state', () => {
  it('two apps in one process keep separate locks', async () => {
    const make = () =>
      Test.createTestingModule({ imports: [SerializedModule.forRoot({ driver: 'memory' })], controllers: [LifeController] }).compile();
    const [a, b] = await Promise.all([make(), make()]);
    const appA = a.createNestApplication();
    const appB = b.createNestApplication();
    await Promise.all([appA.init(), appB.init()]);
    try {
      const key = uniqueId('shared');
      await appA.get(LockService).run(key, async () => {
        // The same key in the other app is free: nothing is shared through module state.
        expect(await appB.get(LockService).run(key, () => 'b ran', { mode: 'reject' })).toBe('b ran');
      });
      expect(appA.get(LockService)).not.toBe(appB.get(LockService));
    } finally {
      await Promise.all([appA.close(), appB.close()]);
    }
  });
});
