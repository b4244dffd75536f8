import { Inject, Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { DAY_MS, type ClaimResult } from '../rewards/rewards.service';
import { DailyReward } from './daily-reward.entity';

/**
 * The example app's daily reward with its state in PostgreSQL, every statement in
 * the app's TypeORM transaction (`txHost.tx`): read the last claim, check it, do
 * the slow part, credit. Two copies in two transactions at once both read "not
 * claimed" and both credit — unless the handler holds the user's lock inside
 * that same transaction (`@Serialized('userId', { transaction: true })`).
 */
@Injectable()
export class TransactionalRewardsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async claimDaily(userId: string): Promise<ClaimResult> {
    const rewards = this.txHost.tx.getRepository(DailyReward);
    const row = await rewards.findOneBy({ userId });
    const now = Date.now();
    const last = row?.lastClaimAt == null ? null : Number(row.lastClaimAt);
    if (last !== null && now - last < DAY_MS) return { claimed: false, rewardCount: row!.rewardCount, nextClaimAt: last + DAY_MS };
    await new Promise((resolve) => setTimeout(resolve, this.config.rewardTaskMs));
    const [credited] = (await this.txHost.tx.query(
      `INSERT INTO example_daily_rewards (user_id, reward_count, last_claim_at) VALUES ($1, 1, $2)
       ON CONFLICT (user_id) DO UPDATE SET reward_count = example_daily_rewards.reward_count + 1, last_claim_at = $2
       RETURNING reward_count`,
      [userId, now],
    )) as { reward_count: number }[];
    return { claimed: true, rewardCount: credited.reward_count, nextClaimAt: now + DAY_MS };
  }

  async get(userId: string): Promise<{ rewardCount: number; lastClaimAt: number | null }> {
    const row = await this.txHost.tx.getRepository(DailyReward).findOneBy({ userId });
    return { rewardCount: row?.rewardCount ?? 0, lastClaimAt: row?.lastClaimAt == null ? null : Number(row.lastClaimAt) };
  }
}
