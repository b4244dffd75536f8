/**
 * The recipes of docs/testing.md, run as tests. Each `// #region <name>` below is
 * the code block of the same name in the doc, character for character
 * (test/testing/recipes-doc.spec.ts checks it): change them together.
 */
import { ConflictException, Controller, Injectable, Module, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InMemoryLockProvider, LockProvider, Serialized, SerializedModule } from 'nestjs-serialized';
import { SerializedTestingModule, withInMemoryLocks } from 'nestjs-serialized/testing';
import request from 'supertest';

// #region fixtures
@Injectable()
export class WalletService {
  balance = 0;

  @Serialized('0') // the first argument: the account id
  async deposit(accountId: string, amount: number): Promise<number> {
    const before = this.balance;
    await new Promise((resolve) => setImmediate(resolve)); // a database round trip
    this.balance = before + amount;
    return this.balance;
  }
}

@Injectable()
export class RewardsStore {
  private readonly claimed = new Set<string>();

  async claim(userId: string): Promise<{ userId: string }> {
    if (this.claimed.has(userId)) throw new ConflictException('already claimed today');
    await new Promise((resolve) => setImmediate(resolve)); // a database round trip
    this.claimed.add(userId);
    return { userId };
  }
}

@Controller('users/:userId')
export class RewardsController {
  constructor(private readonly rewards: RewardsStore) {}

  @Post('rewards/daily')
  @Serialized('userId')
  claim(@Param('userId') userId: string) {
    return this.rewards.claim(userId);
  }
}
// #endregion

describe('docs/testing.md recipes', () => {
  // #region unit-service
  it('a decorated service, built with new', async () => {
    const wallet = withInMemoryLocks(new WalletService());

    await Promise.all([wallet.deposit('acc-1', 10), wallet.deposit('acc-1', 5)]);

    expect(wallet.balance).toBe(15); // without the lock, one deposit would be lost
  });

  it('fails closed without the opt-in', async () => {
    await expect(new WalletService().deposit('acc-1', 10)).rejects.toThrow(/no LockService on this instance/);
  });
  // #endregion

  // #region unit-controller
  it('a decorated controller, called directly', async () => {
    const controller = withInMemoryLocks(new RewardsController(new RewardsStore()));

    const outcomes = await Promise.allSettled([controller.claim('42'), controller.claim('42')]);

    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
  });
  // #endregion

  // #region e2e-memory
  it('e2e: duplicates run one at a time (in-memory driver)', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [SerializedTestingModule.forRoot()],
      controllers: [RewardsController],
      providers: [RewardsStore],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();

    const responses = await Promise.all(
      [1, 2, 3].map(() => request(app.getHttpServer()).post('/users/42/rewards/daily')),
    );

    expect(responses.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    await app.close();
  });
  // #endregion

  // #region override-provider
  @Module({
    imports: [SerializedModule.forRoot({ driver: 'redis', redis: { url: 'redis://127.0.0.1:1' } })],
    controllers: [RewardsController],
    providers: [RewardsStore],
  })
  class AppModule {}

  it('e2e: the app module, its Redis backend swapped for an in-memory one', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(LockProvider)
      .useValue(new InMemoryLockProvider())
      .compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();

    const responses = await Promise.all(
      [1, 2, 3].map(() => request(app.getHttpServer()).post('/users/7/rewards/daily')),
    );

    expect(responses.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    await app.close();
  });
  // #endregion
});
