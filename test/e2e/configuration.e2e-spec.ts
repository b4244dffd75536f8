import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Test } from '@nestjs/testing';
import { childEntry } from '../support/child-entry';
import {
  InMemoryLockProvider,
  LockProvider,
  SerializedConfigError,
  SerializedModule,
  type SerializedModuleOptions,
} from 'nestjs-serialized';

const ROOT = path.resolve(__dirname, '..', '..');

describe('configuration from the environment', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('forRoot() with no options uses the in-memory default', async () => {
    delete process.env.SERIALIZED_DRIVER;
    const moduleRef = await Test.createTestingModule({ imports: [SerializedModule.forRoot()] }).compile();
    expect(moduleRef.get(LockProvider)).toBeInstanceOf(InMemoryLockProvider);
    await moduleRef.close();
  });

  it('a bad value stops start-up with one message naming every invalid variable and what it accepts', async () => {
    process.env.SERIALIZED_DRIVER = 'mongo';
    process.env.SERIALIZED_LEASE_MS = '30s';
    process.env.SERIALIZED_MAX_PENDING = '-1';
    process.env.SERIALIZED_KEY_PREFIX = 'has space';
    const compiling = Test.createTestingModule({ imports: [SerializedModule.forRoot()] }).compile();
    await expect(compiling).rejects.toBeInstanceOf(SerializedConfigError);
    const error = (await compiling.catch((e) => e)) as SerializedConfigError;
    expect(error.problems).toHaveLength(4);
    expect(error.message).toContain('SERIALIZED_DRIVER="mongo" is invalid: accepts one of memory, redis, postgres');
    expect(error.message).toContain('SERIALIZED_LEASE_MS="30s" is invalid: accepts an integer number of milliseconds');
    expect(error.message).toContain('SERIALIZED_MAX_PENDING="-1"');
    expect(error.message).toContain('SERIALIZED_KEY_PREFIX="has space"');
  });

  it('the example app refuses to start on a bad variable, and says which', () => {
    const result = spawnSync(process.execPath, childEntry('src/main.ts').args, {
      cwd: ROOT,
      env: { ...process.env, ...childEntry('src/main.ts').env, SERIALIZED_WAIT_TIMEOUT_MS: 'soon', PORT: 'eighty' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).not.toBe(0);
    // One message for the app's variables and the library's.
    expect(result.stderr + result.stdout).toContain('SERIALIZED_WAIT_TIMEOUT_MS="soon" is invalid');
    expect(result.stderr + result.stdout).toContain('PORT="eighty" is invalid: accepts an integer from 1 to 65535');
  });

  it('the redis driver without REDIS_URL names what is missing', async () => {
    process.env.SERIALIZED_DRIVER = 'redis';
    delete process.env.REDIS_URL;
    const error = await Test.createTestingModule({ imports: [SerializedModule.forRoot()] })
      .compile()
      .catch((e) => e);
    expect(error).toBeInstanceOf(SerializedConfigError);
    expect(error.message).toContain('REDIS_URL is required with the redis driver');
  });

  describe('credentials in URLs never reach a start-up error', () => {
    const SECRET = 'hunter2-Pa55';
    const compileWith = async (env: Record<string, string>, options: SerializedModuleOptions = {}) => {
      delete process.env.REDIS_URL;
      delete process.env.DATABASE_URL;
      Object.assign(process.env, env);
      const error = await Test.createTestingModule({ imports: [SerializedModule.forRoot(options)] })
        .compile()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(SerializedConfigError);
      return error as SerializedConfigError;
    };
    const everything = (error: SerializedConfigError) => [error.message, String(error.stack), ...error.problems].join('\n');

    it.each([
      [
        'REDIS_URL with the quotes docker --env-file keeps',
        'redis',
        { REDIS_URL: `"redis://:${SECRET}@cache.internal:6379"` },
        'REDIS_URL=',
      ],
      ['REDIS_URL with a user, single-quoted', 'redis', { REDIS_URL: `'redis://app:${SECRET}@cache.internal:6379/0'` }, 'REDIS_URL='],
      ['REDIS_URL with another scheme', 'redis', { REDIS_URL: `http://app:${SECRET}@cache.internal:6379` }, 'REDIS_URL='],
      ['REDIS_URL with an @ in the password', 'redis', { REDIS_URL: `"rediss://app:${SECRET}@x@cache.internal:6380"` }, 'REDIS_URL='],
      ['DATABASE_URL with quotes', 'postgres', { DATABASE_URL: `"postgres://app:${SECRET}@db.internal:5432/app"` }, 'DATABASE_URL='],
      ['DATABASE_URL with another scheme', 'postgres', { DATABASE_URL: `mysql://app:${SECRET}@db.internal/app` }, 'DATABASE_URL='],
      ['DATABASE_URL in key=value form', 'postgres', { DATABASE_URL: `host=db.internal user=app password=${SECRET}` }, 'DATABASE_URL='],
    ])('%s: the error names the variable, keeps the host, and hides the password', async (_name, driver, env, variable) => {
      const error = await compileWith({ SERIALIZED_DRIVER: driver, ...env });
      expect(error.message).toContain(variable);
      expect(error.message).toContain('.internal');
      expect(everything(error)).not.toContain(SECRET);
    });

    it('options.redis.url and options.postgres.connectionString are redacted the same way', async () => {
      const redis = await compileWith({}, { driver: 'redis', redis: { url: `"redis://default:${SECRET}@cache.internal:6379"` } });
      expect(redis.message).toContain('options.redis.url=');
      expect(redis.message).toContain('cache.internal');
      expect(everything(redis)).not.toContain(SECRET);
      const postgres = await compileWith(
        {},
        { driver: 'postgres', postgres: { connectionString: `"postgresql://app:${SECRET}@db.internal/app"` } },
      );
      expect(postgres.message).toContain('options.postgres.connectionString');
      expect(everything(postgres)).not.toContain(SECRET);
    });

    it('the example app prints no password when it refuses to start', () => {
      const result = spawnSync(process.execPath, childEntry('src/main.ts').args, {
        cwd: ROOT,
        env: {
          ...process.env,
          ...childEntry('src/main.ts').env,
          SERIALIZED_DRIVER: 'redis',
          REDIS_URL: `"redis://:${SECRET}@cache.internal:6379"`,
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(result.status).not.toBe(0);
      expect(result.stderr + result.stdout).toContain('REDIS_URL=');
      expect(result.stderr + result.stdout).not.toContain(SECRET);
    });
  });
});
