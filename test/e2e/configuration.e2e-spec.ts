import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Test } from '@nestjs/testing';
import { LockProvider, SerializedConfigError, SerializedModule, InMemoryLockProvider } from 'nestjs-serialized';

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
    const result = spawnSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'src/main.ts'],
      {
        cwd: ROOT,
        env: { ...process.env, SERIALIZED_WAIT_TIMEOUT_MS: 'soon', PORT: 'eighty', TS_NODE_PROJECT: path.join(ROOT, 'tsconfig.json') },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
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
});
