import { Controller, Get, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockService, MysqlLockProvider, Serialized, SerializedConfigError, SerializedModule } from 'nestjs-serialized';
import { TEST_MYSQL_URL } from '../support/services';
import { MysqlInspector, uniquePrefix } from './support/mysql-inspect';

@Controller('my-capped')
class CappedController {
  static runs = 0;

  @Post(':tenant')
  @Serialized('tenant', { concurrency: 2 })
  capped(@Param('tenant') tenant: string) {
    CappedController.runs++;
    return { tenant };
  }
}

@Controller('my-docs')
class DocsController {
  static runs = 0;

  @Get(':doc')
  @Serialized('doc', { shared: true })
  read(@Param('doc') doc: string) {
    DocsController.runs++;
    return { doc };
  }

  @Post(':doc')
  @Serialized('doc')
  write(@Param('doc') doc: string) {
    DocsController.runs++;
    return { doc };
  }
}

/** Starts an app on the mysql driver with `controllers`; resolves with the app, or with why start-up stopped. */
async function start(controllers: (new () => unknown)[], keyPrefix: string): Promise<INestApplication | unknown> {
  const moduleRef = await Test.createTestingModule({
    imports: [SerializedModule.forRoot({ driver: 'mysql', mysql: { url: TEST_MYSQL_URL }, keyPrefix })],
    controllers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  try {
    await app.listen(0, '127.0.0.1');
    return app;
  } catch (error) {
    await app.close().catch(() => undefined);
    return error;
  }
}

/**
 * MySQL named locks are exclusive: one session holds a name, and the server has no
 * shared or counted form. So `concurrency` > 1 and `shared` are refused on this
 * driver — at start-up for a decorated handler, at the call for a provider or
 * `LockService` call — never run as an exclusive lock in disguise
 * (docs/providers/mysql.md, "Limits").
 */
describe("several holders of one key on driver 'mysql'", () => {
  let db: MysqlInspector;
  beforeAll(async () => {
    db = await MysqlInspector.connect();
  });
  afterAll(async () => {
    await db.close();
  });

  it('a handler with concurrency: 2 or shared: true stops start-up, naming the handler, the option and the provider; no handler ever runs', async () => {
    CappedController.runs = DocsController.runs = 0;
    const failed = await start([CappedController, DocsController], uniquePrefix('holders'));
    expect(failed).toBeInstanceOf(SerializedConfigError);
    const { message } = failed as SerializedConfigError;
    expect(message).toMatch(
      /\{ concurrency: 2 \}\) on CappedController#capped: the MysqlLockProvider grants a key to one holder at a time/,
    );
    expect(message).toMatch(/\{ shared: true \}\) on DocsController#read: the MysqlLockProvider grants a key to one holder at a time/);
    // The plain handler beside them is not named.
    expect(message).not.toMatch(/DocsController#write/);
    expect(CappedController.runs + DocsController.runs).toBe(0);
  });

  it('the same app without those options starts and serves its handlers over HTTP', async () => {
    @Controller('my-plain')
    class PlainController {
      @Post(':tenant')
      @Serialized('tenant')
      plain(@Param('tenant') tenant: string) {
        return { tenant };
      }
    }
    const app = (await start([PlainController], uniquePrefix('plain'))) as INestApplication;
    try {
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
      const responses = await Promise.all([1, 2, 3].map(() => request(url).post('/my-plain/t1')));
      expect(responses.map((r) => r.status)).toEqual([201, 201, 201]);
    } finally {
      await app.close();
    }
  });

  it('provider and LockService calls with concurrency or shared are refused at once (RangeError naming both), taking nothing', async () => {
    const provider = new MysqlLockProvider({ url: TEST_MYSQL_URL, keyPrefix: uniquePrefix('holders-call'), lockPoolSize: 2 });
    const locks = new LockService(provider);
    let ran = 0;
    try {
      const refusals = await Promise.all([
        provider.acquire('k', { concurrency: 2 }).catch((e: unknown) => e),
        provider.tryAcquire('k', { shared: true }).catch((e: unknown) => e),
        locks.run('k', () => void ran++, { concurrency: 3 }).catch((e: unknown) => e),
        locks.run('k', () => void ran++, { shared: true, mode: 'reject' }).catch((e: unknown) => e),
      ]);
      const said = refusals.map((error) => [
        (error as Error).name,
        (error as Error).message.match(/^(.*?) is not available on (\w+)/)?.slice(1),
      ]);
      expect(said).toEqual([
        ['RangeError', ['concurrency: 2', 'MysqlLockProvider']],
        ['RangeError', ['shared: true', 'MysqlLockProvider']],
        ['RangeError', ['concurrency: 3', 'MysqlLockProvider']],
        ['RangeError', ['shared: true', 'MysqlLockProvider']],
      ]);
      expect(ran).toBe(0);
      // Nothing was asked of the server: no session opened, nothing held, the key free for a plain caller.
      expect(provider.connections).toBe(0);
      expect(provider.activeKeys).toBe(0);
      expect(await db.holderOf(provider.lockNameOf('k'))).toBeNull();
      const alone = await provider.tryAcquire('k');
      expect(alone).not.toBeNull();
      await alone!.release();
      // concurrency: 1 is the exclusive lock itself, and is served.
      expect(await locks.run('k', () => 'one', { concurrency: 1 })).toBe('one');
    } finally {
      await provider.close();
    }
  });
});
