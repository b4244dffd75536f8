import { ConflictException, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { Serialized } from 'nestjs-serialized';
import type { ClaimResult } from '../rewards/rewards.service';
import { TransactionalRewardsService } from './transactional-rewards.service';

/**
 * The daily reward in the app's own database transaction (docs/transactions.md).
 * The lock is taken inside that transaction (`pg_advisory_xact_lock`), so its
 * COMMIT is the release: the next duplicate reads the committed claim.
 */
@Controller('tx/users/:userId/rewards')
export class TransactionalRewardsController {
  constructor(private readonly rewards: TransactionalRewardsService) {}

  @Post('daily')
  @HttpCode(201)
  @Serialized('userId', { transaction: true })
  async claimDaily(@Param('userId') userId: string): Promise<ClaimResult> {
    return claimedOrConflict(await this.rewards.claimDaily(userId));
  }

  @Get()
  get(@Param('userId') userId: string) {
    return this.rewards.get(userId);
  }
}

/** The same handler in a transaction but without the lock, to see the race. */
@Controller('naive/tx/users/:userId/rewards')
export class NaiveTransactionalRewardsController {
  constructor(
    private readonly rewards: TransactionalRewardsService,
    private readonly txHost: TransactionHost,
  ) {}

  @Post('daily')
  @HttpCode(201)
  async claimDaily(@Param('userId') userId: string): Promise<ClaimResult> {
    return claimedOrConflict(await this.txHost.withTransaction(() => this.rewards.claimDaily(userId)));
  }
}

function claimedOrConflict(result: ClaimResult): ClaimResult {
  if (!result.claimed) throw new ConflictException({ statusCode: 409, message: 'The daily reward was already claimed', ...result });
  return result;
}
