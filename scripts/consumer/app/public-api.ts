/**
 * Compiled by the consumer test (scripts/consumer-test.js) in a fresh app against the
 * packed .d.ts, with only the required peers installed and with every optional peer:
 * the whole public surface, used as an app on the in-memory driver uses it. Each
 * provider class must be assignable to `LockProvider`; no optional peer's typings
 * may be needed.
 */
import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, Post } from '@nestjs/common';
import {
  Idempotent,
  InMemoryLockProvider,
  LockBackendError,
  LockBusyError,
  LockLostError,
  LockProvider,
  LockService,
  LockTimeoutError,
  OncePerTick,
  PostgresLockProvider,
  RedisLockProvider,
  SerializationKeyError,
  Serialized,
  SerializedConfigError,
  SerializedError,
  SerializedExceptionFilter,
  SerializedHealthIndicator,
  SerializedInterceptor,
  SerializedJobs,
  SerializedLock,
  SerializedModule,
  SkipSerialized,
} from 'nestjs-serialized';
import type {
  AcquireOptions,
  ErrorMappingOptions,
  IdempotentOptions,
  Lock,
  LockProviderCommonOptions,
  OncePerTickOptions,
  PgPoolLike,
  RedisClientLike,
  RunOptions,
  SerializedDriver,
  SerializedHealthResult,
  SerializedModuleOptions,
  SerializedOptions,
} from 'nestjs-serialized';
import { SerializedTestingModule, withInMemoryLocks } from 'nestjs-serialized/testing';

// Every provider is a LockProvider (the DI token, `forRoot({ provider })`, `new LockService(provider)`).
export const providers: LockProvider[] = [
  new InMemoryLockProvider(),
  new RedisLockProvider({ url: 'redis://127.0.0.1:6379', keyPrefix: 'consumer' }),
  new PostgresLockProvider({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', lockPoolSize: 2 }),
];
export const service = new LockService(new InMemoryLockProvider());

const errorMapping: ErrorMappingOptions = { body: (error, status, defaultBody) => ({ ...defaultBody, kind: error.name, status }) };
const common: LockProviderCommonOptions = { keyPrefix: 'consumer', leaseMs: 30_000, waitTimeoutMs: 10_000 };
const driver: SerializedDriver = 'memory';
export const options: SerializedModuleOptions = { ...common, driver, errorMapping, reentrant: true };

@Injectable()
export class WalletService {
  constructor(private readonly locks: LockService) {}

  @Serialized('0', { scope: 'wallet', mode: 'wait' } satisfies SerializedOptions)
  async deposit(walletId: string, amount: number): Promise<number> {
    const run: RunOptions & AcquireOptions = { waitTimeoutMs: 500 };
    return this.locks.run(`audit:${walletId}`, (lock: Lock) => amount + Number(lock.fencingToken), run);
  }
}

@Controller('users/:userId')
@Serialized('userId')
export class RewardsController {
  @Post('rewards')
  claim(@Param('userId') userId: string, @SerializedLock() lock: Lock): { userId: string; token: string } {
    return { userId, token: lock.fencingToken.toString() };
  }

  @Post('payments')
  @Idempotent({ key: 'headers.idempotency-key', mode: 'wait' } satisfies IdempotentOptions)
  pay(@Param('userId') userId: string): { userId: string } {
    return { userId };
  }

  @Get()
  @SkipSerialized()
  list(): string[] {
    return [];
  }
}

@SerializedJobs({ recheckMs: 1000 })
export class JobsTuning {}

// `@OncePerTick` compiles without @nestjs/schedule's typings (the schedule decorator is the app's).
export class NightlyDigest {
  @OncePerTick({ name: 'nightly-digest', maxClockSkewMs: 1000, leaseMs: 60_000 } satisfies OncePerTickOptions)
  async send(): Promise<void> {}
}

@Module({
  imports: [SerializedModule.forRoot({ provider: new InMemoryLockProvider() })],
  controllers: [RewardsController],
  providers: [WalletService],
})
export class WithProviderModule {}

@Module({
  imports: [SerializedModule.forRootAsync({ useFactory: (): SerializedModuleOptions => ({ driver: 'memory', keyPrefix: 'consumer' }) })],
})
export class AsyncModule {}

export const testing = [SerializedTestingModule.forRoot(), withInMemoryLocks(new WalletService(service))];

export function describeError(error: unknown): string {
  if (error instanceof SerializationKeyError) return `${error.problem} ${error.lookedIn.join(',')}`;
  if (error instanceof LockBusyError) return error.reason;
  if (error instanceof LockTimeoutError) return `${error.waitTimeoutMs}`;
  if (error instanceof LockLostError || error instanceof LockBackendError || error instanceof SerializedConfigError) return error.message;
  return error instanceof SerializedError ? error.name : String(error);
}

export async function health(indicator: SerializedHealthIndicator): Promise<'up' | 'down'> {
  const result: SerializedHealthResult<'locks'> = await indicator.isHealthy('locks', { timeoutMs: 500 });
  return result.locks.status;
}

// The shapes of the clients an app may pass, without ioredis' or pg's typings.
export function withClients(client: RedisClientLike, pool: PgPoolLike): SerializedModuleOptions[] {
  return [
    { driver: 'redis', redis: { client } },
    { driver: 'postgres', postgres: { pool } },
  ];
}

export const enhancers = [SerializedInterceptor, SerializedExceptionFilter];
