import { ConflictException, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Serialized } from 'nestjs-serialized';
import { RewardsService, type ClaimResult } from './rewards.service';

/** The daily reward, serialized per user: five tabs clicking at once still claim once. */
@Controller('users/:userId/rewards')
export class RewardsController {
  constructor(private readonly rewards: RewardsService) {}

  @Post('daily')
  @HttpCode(201)
  @Serialized('userId')
  async claimDaily(@Param('userId') userId: string): Promise<ClaimResult> {
    return claimedOrConflict(await this.rewards.claimDaily(userId));
  }

  @Get()
  get(@Param('userId') userId: string) {
    return this.rewards.get(userId);
  }
}

/** The same handler without `@Serialized`, to see the race. */
@Controller('naive/users/:userId/rewards')
export class NaiveRewardsController {
  constructor(private readonly rewards: RewardsService) {}

  @Post('daily')
  @HttpCode(201)
  async claimDaily(@Param('userId') userId: string): Promise<ClaimResult> {
    return claimedOrConflict(await this.rewards.claimDaily(userId));
  }
}

function claimedOrConflict(result: ClaimResult): ClaimResult {
  if (!result.claimed) {
    throw new ConflictException({ statusCode: 409, message: 'The daily reward was already claimed', ...result });
  }
  return result;
}
