import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One user's daily reward, in a PostgreSQL table (transaction mode, docs/transactions.md). */
@Entity({ name: 'example_daily_rewards' })
export class DailyReward {
  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ name: 'reward_count', type: 'int', default: 0 })
  rewardCount!: number;

  /** Epoch ms of the last claim (bigint: TypeORM hands it back as text). */
  @Column({ name: 'last_claim_at', type: 'bigint', nullable: true })
  lastClaimAt!: string | null;
}

/** Created at start-up when missing (`daily-rewards.schema.ts`; several instances may start at once, so not by schema sync). */
export const DAILY_REWARDS_DDL =
  'CREATE TABLE IF NOT EXISTS example_daily_rewards (user_id text PRIMARY KEY, reward_count int NOT NULL DEFAULT 0, last_claim_at bigint)';
