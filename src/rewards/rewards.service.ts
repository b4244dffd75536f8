import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { AppStore, type RewardState } from '../store/app.store';

export const DAY_MS = 24 * 3600_000;

export interface ClaimResult {
  claimed: boolean;
  rewardCount: number;
  nextClaimAt: number;
}

/**
 * "At most one reward per 24 h": read the last claim, check it, do the slow part
 * (standing for a 20–30 s task), then increment the counter. Copies of this call
 * running at once all pass the check and all increment — the race the example
 * app shows (five clicks in a second, five rewards; docs/example-app.md).
 */
@Injectable()
export class RewardsService {
  constructor(
    private readonly store: AppStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async claimDaily(userId: string): Promise<ClaimResult> {
    const state = await this.store.getRewards(userId);
    const now = Date.now();
    if (state.lastClaimAt !== null && now - state.lastClaimAt < DAY_MS) {
      return { claimed: false, rewardCount: state.rewardCount, nextClaimAt: state.lastClaimAt + DAY_MS };
    }
    await new Promise((resolve) => setTimeout(resolve, this.config.rewardTaskMs));
    const next = await this.store.recordClaim(userId, now);
    return { claimed: true, rewardCount: next.rewardCount, nextClaimAt: now + DAY_MS };
  }

  get(userId: string): Promise<RewardState> {
    return this.store.getRewards(userId);
  }
}
