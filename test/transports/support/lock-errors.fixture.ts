import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { LockService, RedisLockProvider, Serialized, SerializedModule, type Lock, type SerializedModuleOptions } from 'nestjs-serialized';
import { freeLocalPort } from '../../support/local-server';
import { TEST_REDIS_URL } from '../../support/services';

/** Another provider instance on the app's Redis and prefix: "someone else" who holds keys. */
export const OTHER_INSTANCE = Symbol('another RedisLockProvider instance');
/** A `LockService` whose provider points at a port nothing listens on. */
export const DEAD_BACKEND = Symbol('a LockService on a dead backend');

/** The ways a lock error escapes a request handler, each thrown by a real path of the library. */
export type Scenario = 'busy' | 'timeout' | 'down' | 'badKey' | 'lost';
export const SCENARIOS: readonly Scenario[] = ['busy', 'timeout', 'down', 'badKey', 'lost'];

/** What each scenario must answer, on every transport: the status, the stable code, the message a client may read. */
export const EXPECTED: Record<
  Scenario,
  { status: number; code: string; graphqlCode: string; retryAfter: string | undefined; message: string }
> = {
  busy: {
    status: 429,
    code: 'LOCK_BUSY',
    graphqlCode: 'TOO_MANY_REQUESTS',
    retryAfter: '1',
    message: 'Another request with the same key is in progress; retry later',
  },
  timeout: {
    status: 429,
    code: 'LOCK_TIMEOUT',
    graphqlCode: 'TOO_MANY_REQUESTS',
    retryAfter: '1',
    message: 'Timed out after 300 ms waiting for another request with the same key to finish; retry later',
  },
  down: {
    status: 503,
    code: 'LOCK_BACKEND_UNAVAILABLE',
    graphqlCode: 'SERVICE_UNAVAILABLE',
    retryAfter: '1',
    message: 'The lock backend is unavailable; retry later',
  },
  badKey: {
    status: 400,
    code: 'SERIALIZATION_KEY_MISSING',
    graphqlCode: 'BAD_REQUEST',
    retryAfter: undefined,
    message: 'The key function returned nothing',
  },
  lost: {
    status: 503,
    code: 'LOCK_LOST',
    graphqlCode: 'SERVICE_UNAVAILABLE',
    retryAfter: '1',
    message: 'The lock of this request was lost before it finished; retry later',
  },
};

/**
 * What an answer must never carry (a lock key, a key value, a class or method name):
 * the scenario's id (the value of every key here), the lock keys' scopes, the
 * service's class and its methods, `Class#method`.
 */
export function leaksIn(answer: unknown, id: string): string[] {
  const text = JSON.stringify(answer);
  return [id, 'LockErrorsService', '#', 'busy:', 'down:', 'lost:', 'key:', 'Controller', 'Resolver', 'Gateway'].filter((word) =>
    text.includes(word),
  );
}

/** A LockService over a Redis provider pointed at a closed port; the provider closes with the app. */
class DeadBackend extends LockService implements OnApplicationShutdown {
  constructor(private readonly dead: RedisLockProvider) {
    super(dead);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.dead.close();
  }
}

/**
 * A plain service whose methods hit lock errors, called by undecorated handlers
 * of every transport: `@Serialized` service methods (busy, timed out, bad key)
 * and `LockService.run` (dead backend, lock taken over while held).
 */
@Injectable()
export class LockErrorsService {
  /** How often each protected body ran (it must not, in any scenario). */
  readonly runs: Record<Scenario, number> = { busy: 0, timeout: 0, down: 0, badKey: 0, lost: 0 };

  constructor(
    private readonly locks: LockService,
    @Inject(OTHER_INSTANCE) private readonly other: RedisLockProvider,
    @Inject(DEAD_BACKEND) private readonly dead: LockService,
  ) {}

  @Serialized((id: string) => id, { scope: 'busy', mode: 'reject' })
  async busy(_id: string): Promise<string> {
    this.runs.busy++;
    return 'ran';
  }

  @Serialized((id: string) => id, { scope: 'busy', waitTimeoutMs: 300 })
  async timeout(_id: string): Promise<string> {
    this.runs.timeout++;
    return 'ran';
  }

  down(id: string): Promise<string> {
    return this.dead.run(`down:${id}`, () => {
      this.runs.down++;
      return 'ran';
    });
  }

  /** Called with an empty id: the key is missing. */
  @Serialized((id: string) => id, { scope: 'key' })
  async badKey(_id: string): Promise<string> {
    this.runs.badKey++;
    return 'ran';
  }

  /** Holds the key while another instance takes it over; `extend()` then throws `LockLostError`. */
  lost(id: string): Promise<string> {
    return this.locks.run(`lost:${id}`, async (lock) => {
      const theirs = await this.takeOver(lock);
      try {
        await lock.extend();
        this.runs.lost++;
        return 'ran';
      } finally {
        await theirs.release();
      }
    });
  }

  /** The test's hold on a key, from the other instance (busy and timeout need it). */
  hold(scenario: Scenario, id: string): Promise<Lock> | undefined {
    return scenario === 'busy' || scenario === 'timeout' ? this.other.acquire(`busy:${id}`) : undefined;
  }

  private async takeOver(lock: Lock): Promise<Lock> {
    const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    try {
      // As if our lease had run out: the lock key is gone, and the other instance takes it.
      await redis.del(this.other.redisKeysOf(lock.key).lock);
    } finally {
      redis.disconnect();
    }
    return this.other.acquire(lock.key, { waitTimeoutMs: 5000 });
  }
}

@Module({})
export class LockErrorsModule {
  /** The library on Redis under `keyPrefix`, the service, and the other and dead instances. */
  static forRoot(keyPrefix: string, options: SerializedModuleOptions = {}): DynamicModule {
    return {
      module: LockErrorsModule,
      imports: [SerializedModule.forRoot({ driver: 'redis', redis: { url: TEST_REDIS_URL }, keyPrefix, ...options })],
      providers: [
        LockErrorsService,
        { provide: OTHER_INSTANCE, useFactory: () => new RedisLockProvider({ url: TEST_REDIS_URL, keyPrefix }) },
        {
          provide: DEAD_BACKEND,
          useFactory: async () =>
            new DeadBackend(new RedisLockProvider({ url: `redis://127.0.0.1:${await freeLocalPort()}`, keyPrefix, connectTimeoutMs: 300 })),
        },
      ],
      exports: [LockErrorsService],
    };
  }
}

/** Runs `call` for `scenario` with the key held by the other instance where the scenario needs it. */
export async function inScenario<T>(
  service: LockErrorsService,
  scenario: Scenario,
  id: string,
  call: (arg: string) => Promise<T>,
): Promise<T> {
  const held = await service.hold(scenario, id);
  try {
    return await call(scenario === 'badKey' ? '' : id);
  } finally {
    await held?.release();
  }
}
