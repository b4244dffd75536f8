import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Client } from 'pg';
import { LockProvider, LockService, PostgresLockProvider, RedisLockProvider, SerializedModule } from 'nestjs-serialized';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/services';
import { uniqueId } from '../support/timing';

describe('SerializedModule: provider tuning and a provider built in code', () => {
  it('postgres: { applicationName, lockPoolSize, … } reach the provider: its sessions carry the name', async () => {
    const applicationName = uniqueId('opts15').slice(0, 40);
    const moduleRef = await Test.createTestingModule({
      imports: [
        SerializedModule.forRoot({
          driver: 'postgres',
          keyPrefix: uniqueId('opts'),
          postgres: {
            connectionString: TEST_DATABASE_URL,
            applicationName,
            lockPoolSize: 2,
            sessionTimeoutMs: 5000,
            idleTimeoutMs: 60_000,
          },
        }),
      ],
    }).compile();
    const provider = moduleRef.get(LockProvider) as PostgresLockProvider;
    expect(provider.applicationName).toBe(applicationName);
    const inspector = new Client({ connectionString: TEST_DATABASE_URL });
    await inspector.connect();
    try {
      const locks = moduleRef.get(LockService);
      const sessions = await locks.run(uniqueId('k'), async () => {
        const { rows } = await inspector.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
          applicationName,
        ]);
        return rows[0].n as number;
      });
      expect(sessions).toBe(1);
    } finally {
      await moduleRef.close();
      await inspector.end();
    }
  });

  it('provider: an instance is used as it is and never closed by the app, so two apps may share it', async () => {
    const provider = new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix: uniqueId('opts-shared') });
    const boot = () => Test.createTestingModule({ imports: [SerializedModule.forRoot({ provider, driver: 'memory' })] }).compile();
    const [one, two] = [await boot(), await boot()];
    try {
      const key = uniqueId('shared');
      const held = await one.get(LockService).run(key, async () => two.get(LockProvider).tryAcquire(key));
      // The second app sees the first one's lock: one provider, one queue.
      expect(held).toBeNull();
      expect(one.get(LockProvider)).toBeInstanceOf(RedisLockProvider);
      expect(one.get(LockProvider).constructor).toBe(RedisLockProvider);
      expect((one.get(LockProvider) as RedisLockProvider).redisKeysOf(key)).toEqual(provider.redisKeysOf(key));
      await one.close();
      // Still open after the first app closed: the second app keeps working.
      await expect(two.get(LockService).run(key, () => 'still served')).resolves.toBe('still served');
      await two.close();
      const lock = await provider.acquire(key);
      await lock.release();
    } finally {
      await provider.close();
    }
    // Its owner closed it: now it refuses.
    await expect(provider.acquire(uniqueId('after'))).rejects.toMatchObject({ name: 'LockBackendError' });
  });

  it('a missing dependency of forRootAsync names SERIALIZED_MODULE_OPTIONS, not a generated token', async () => {
    @Injectable()
    class MissingConfig {}
    @Module({})
    class EmptyModule {}
    const compiling = Test.createTestingModule({
      imports: [SerializedModule.forRootAsync({ imports: [EmptyModule], inject: [MissingConfig], useFactory: () => ({}) })],
    }).compile();
    const error = (await compiling.catch((e: Error) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toContain('SERIALIZED_MODULE_OPTIONS');
    expect(error.message).not.toContain('CONFIGURABLE_MODULE_OPTIONS');
  });

  it('redis: { heartbeatMs } and SERIALIZED_REDIS_HEARTBEAT_MS reach the provider; options in code win', async () => {
    const saved = process.env.SERIALIZED_REDIS_HEARTBEAT_MS;
    process.env.SERIALIZED_REDIS_HEARTBEAT_MS = '2500';
    try {
      for (const [redis, expected] of [
        [{ url: TEST_REDIS_URL }, 2500],
        [{ url: TEST_REDIS_URL, heartbeatMs: 1500 }, 1500],
      ] as const) {
        const moduleRef = await Test.createTestingModule({
          imports: [SerializedModule.forRoot({ driver: 'redis', keyPrefix: uniqueId('opts-hb'), redis })],
        }).compile();
        expect((moduleRef.get(LockProvider) as RedisLockProvider).heartbeatMs).toBe(expected);
        await moduleRef.close();
      }
    } finally {
      if (saved === undefined) delete process.env.SERIALIZED_REDIS_HEARTBEAT_MS;
      else process.env.SERIALIZED_REDIS_HEARTBEAT_MS = saved;
    }
  });
});
