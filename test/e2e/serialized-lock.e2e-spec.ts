import { Controller, Get, Injectable, Param, Post, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  LockProvider,
  LockService,
  Serialized,
  SerializedInterceptor,
  SerializedLock,
  SerializedConfigError,
  SerializedModule,
  SkipSerialized,
  type Lock,
} from 'nestjs-serialized';
import { TEST_REDIS_URL } from '../support/services';
import { deferred, uniqueId, waitFor } from '../support/timing';

/** Service code that reads the lock of the section it is called from. */
@Injectable()
class FenceReader {
  constructor(private readonly locks: LockService) {}

  current(key?: string): Lock | undefined {
    return this.locks.current(key);
  }
}

/** How many times each request's key was resolved (ids are unique per test). */
const keyReads = new Map<string, number>();
/** A request of `/lock/class/:id` waits for its gate while holding the key. */
const gates = new Map<string, Promise<void>>();

function countedKey(ctx: ExecutionContext): string {
  const id = ctx.switchToHttp().getRequest<{ params: { id: string } }>().params.id;
  keyReads.set(id, (keyReads.get(id) ?? 0) + 1);
  return id;
}

const describeLock = (lock: Lock, fromService: Lock | undefined) => ({
  key: lock.key,
  fencingToken: String(lock.fencingToken),
  sameInService: fromService === lock,
  aborted: lock.signal.aborted,
  canExtend: typeof lock.extend === 'function',
});

@Controller('lock/method')
class MethodLevelController {
  constructor(private readonly fences: FenceReader) {}

  @Post(':id')
  @Serialized(countedKey, { scope: 'lock-method' })
  handle(@Param('id') _id: string, @SerializedLock() lock: Lock) {
    return describeLock(lock, this.fences.current());
  }
}

@Controller('lock/class')
@Serialized('id', { scope: 'lock-class' })
class ClassLevelController {
  constructor(private readonly fences: FenceReader) {}

  @Post(':id')
  async hold(@Param('id') id: string, @SerializedLock() lock: Lock) {
    await gates.get(id);
    return describeLock(lock, this.fences.current(`lock-class:${id}`));
  }

  @Get(':id')
  @SkipSerialized()
  read(@Param('id') _id: string) {
    return { held: this.fences.current() !== undefined };
  }
}

/** `reentrant: false`: nothing inside joins the section, yet the handler and its services still see its lock. */
@Controller('lock/solo')
class NonReentrantController {
  constructor(
    private readonly fences: FenceReader,
    private readonly locks: LockService,
  ) {}

  @Post(':id')
  @Serialized('id', { scope: 'lock-solo', reentrant: false })
  async handle(@Param('id') id: string, @SerializedLock() lock: Lock) {
    // A nested run on the same key does not join: it queues behind this handler (and times out here).
    const nested = await this.locks.run(`lock-solo:${id}`, () => 'joined', { waitTimeoutMs: 100 }).catch((error: Error) => error.name);
    return { ...describeLock(lock, this.fences.current()), byKey: this.fences.current(`lock-solo:${id}`) === lock, nested };
  }
}

type Adapter = 'express' | 'fastify';

describe.each([
  ['express', false, 'memory'],
  ['fastify', false, 'memory'],
  ['express', true, 'memory'],
  ['fastify', true, 'memory'],
  ['express', true, 'redis'],
  ['fastify', false, 'redis'],
] as [Adapter, boolean, 'memory' | 'redis'][])(
  '@SerializedLock, LockService.current and @SkipSerialized (%s, SerializedInterceptor as APP_INTERCEPTOR: %s, %s)',
  (adapter, global, driver) => {
    let app: INestApplication;
    let url: string;
    let acquisitions: jest.SpyInstance[];

    // LockService asks the provider's lines (its local layer) with what it validated: a free key synchronously (`acquireNow`, counted when it returned a lock), any other through acquire/tryAcquire.
    const acquired = (): number =>
      acquisitions.reduce(
        (sum, spy) => sum + spy.mock.results.filter((result) => result.type !== 'return' || result.value !== undefined).length,
        0,
      );

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        // The redis rows run on the real server, under a prefix of their own.
        imports: [
          SerializedModule.forRoot(
            driver === 'redis' ? { driver, redis: { url: TEST_REDIS_URL }, keyPrefix: uniqueId('lock-e2e') } : { driver },
          ),
        ],
        controllers: [MethodLevelController, ClassLevelController, NonReentrantController],
        providers: [FenceReader, ...(global ? [{ provide: APP_INTERCEPTOR, useClass: SerializedInterceptor }] : [])],
      }).compile();
      app =
        adapter === 'fastify'
          ? moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false })
          : moduleRef.createNestApplication({ logger: false });
      await app.init();
      // The row runs on the driver it names (a row that silently ran on another could not fail for it).
      expect(app.get(LockProvider).constructor.name).toBe(driver === 'redis' ? 'RedisLockProvider' : 'InMemoryLockProvider');
      if (adapter === 'fastify') await (app as NestFastifyApplication).getHttpAdapter().getInstance().ready();
      await app.listen(0, '127.0.0.1');
      url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
      const provider = app.get(LockProvider);
      const lines = (provider as unknown as { lines: { acquireNow(): unknown; acquire(): unknown; tryAcquire(): unknown } }).lines;
      acquisitions = [jest.spyOn(lines, 'acquireNow'), jest.spyOn(lines, 'acquire'), jest.spyOn(lines, 'tryAcquire')];
    });
    afterAll(async () => {
      await app.close();
    });

    it('gives the handler its lock; its fencing token increases across requests; service code sees the same lock', async () => {
      const id = uniqueId('m');
      const tokens: bigint[] = [];
      for (let n = 0; n < 3; n++) {
        const response = await request(url).post(`/lock/method/${id}`).expect(201);
        expect(response.body).toEqual({
          key: `lock-method:${id}`,
          fencingToken: expect.stringMatching(/^\d+$/),
          sameInService: true,
          aborted: false,
          canExtend: true,
        });
        tokens.push(BigInt(response.body.fencingToken));
      }
      expect(tokens[1]).toBeGreaterThan(tokens[0]);
      expect(tokens[2]).toBeGreaterThan(tokens[1]);
    });

    it('locks once per request: the key is resolved once and the provider acquires once', async () => {
      const id = uniqueId('once');
      const before = acquired();
      await Promise.all([1, 2, 3].map(() => request(url).post(`/lock/method/${id}`).expect(201)));
      expect(keyReads.get(id)).toBe(3);
      expect(acquired() - before).toBe(3);

      const classBefore = acquired();
      await request(url)
        .post(`/lock/class/${uniqueId('c')}`)
        .expect(201);
      expect(acquired() - classBefore).toBe(1);
    });

    it('a class-level @Serialized gives its handlers their lock; LockService.current(key) finds it by key', async () => {
      const id = uniqueId('c');
      const response = await request(url).post(`/lock/class/${id}`).expect(201);
      expect(response.body).toMatchObject({ key: `lock-class:${id}`, sameInService: true });
    });

    it('@SkipSerialized() exempts a handler from its class-level @Serialized: no lock, no wait', async () => {
      const id = uniqueId('skip');
      const gate = deferred();
      gates.set(id, gate.promise);
      const before = acquired();
      const holding = request(url)
        .post(`/lock/class/${id}`)
        .then((r) => r);
      await waitFor(() => acquired() > before, 5000, 'the POST to hold the key');
      // The key is held by the POST; the skipped GET of the same id answers at once, holding nothing.
      const read = await request(url).get(`/lock/class/${id}`).expect(200);
      expect(read.body).toEqual({ held: false });
      expect(acquired() - before).toBe(1);
      gate.resolve();
      expect((await holding).status).toBe(201);
    });

    it('with reentrant: false the handler still gets its lock (service code too), and a nested call on its key does not join it', async () => {
      const id = uniqueId('solo');
      const response = await request(url).post(`/lock/solo/${id}`).expect(201);
      expect(response.body).toMatchObject({ key: `lock-solo:${id}`, sameInService: true, byKey: true, nested: 'LockTimeoutError' });
    });

    it('LockService.current() outside any section is undefined', () => {
      expect(app.get(LockService).current()).toBeUndefined();
      expect(app.get(FenceReader).current('lock-class:anything')).toBeUndefined();
    });
  },
);

@Controller('lockless')
@Serialized('id')
class LocklessController {
  @Post('skipped/:id')
  @SkipSerialized()
  skipped(@Param('id') _id: string, @SerializedLock() lock: Lock) {
    return lock.key;
  }

  @Post('fine/:id')
  fine(@Param('id') _id: string, @SerializedLock() lock: Lock) {
    return lock.key;
  }
}

@Controller('undecorated')
class UndecoratedController {
  @Post(':id')
  plain(@Param('id') _id: string, @SerializedLock() lock: Lock) {
    return lock.key;
  }
}

describe('@SerializedLock() on a handler that holds no lock', () => {
  it('stops start-up, naming each such handler (and not the serialized ones)', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [SerializedModule.forRoot({ driver: 'memory' })],
      controllers: [LocklessController, UndecoratedController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    let error: unknown;
    try {
      await app.init();
    } catch (caught) {
      error = caught;
    } finally {
      await app.close().catch(() => undefined);
    }
    expect(error).toBeInstanceOf(SerializedConfigError);
    const problems = (error as SerializedConfigError).problems;
    expect(problems).toEqual([
      expect.stringContaining('@SerializedLock() on LocklessController#skipped: the handler holds no lock'),
      expect.stringContaining('@SerializedLock() on UndecoratedController#plain: the handler holds no lock'),
    ]);
  });
});
