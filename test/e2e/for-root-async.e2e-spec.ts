import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockProvider, SerializedModule } from 'nestjs-serialized';

/** A stand-in for @nestjs/config's ConfigModule: a module that is not global. */
@Injectable()
class ConfigService {
  get(name: string): string | undefined {
    return { SERIALIZED_DRIVER: 'memory', SERIALIZED_KEY_PREFIX: 'async-config' }[name];
  }
}
@Module({ providers: [ConfigService], exports: [ConfigService] })
class ConfigModule {}

describe('SerializedModule.forRootAsync (README snippet)', () => {
  it('works with imports: [ConfigModule]', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        SerializedModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({ driver: 'memory', keyPrefix: config.get('SERIALIZED_KEY_PREFIX') }),
        }),
      ],
    }).compile();
    const lock = await moduleRef.get(LockProvider).acquire('k');
    expect(lock.key).toBe('k');
    await lock.release();
    await moduleRef.close();
  });

  it('without them, Nest names the module options token, not an anonymous CONFIGURABLE_MODULE_OPTIONS[uuid]', async () => {
    const compiling = Test.createTestingModule({
      imports: [
        SerializedModule.forRootAsync({
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({ keyPrefix: config.get('SERIALIZED_KEY_PREFIX') }),
        }),
      ],
    }).compile();
    const error = (await compiling.then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/SERIALIZED_MODULE_OPTIONS/);
    expect(error.message).not.toMatch(/CONFIGURABLE_MODULE_OPTIONS/);
    expect(error.message).toMatch(/ConfigService/);
  });
});
