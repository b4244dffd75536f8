import { Module } from '@nestjs/common';
import { NaiveRewardsController, RewardsController } from './rewards.controller';
import { RewardsService } from './rewards.service';

@Module({
  controllers: [RewardsController, NaiveRewardsController],
  providers: [RewardsService],
})
export class RewardsModule {}
