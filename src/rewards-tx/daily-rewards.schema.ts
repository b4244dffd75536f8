import type { DataSource } from 'typeorm';
import { DAILY_REWARDS_DDL } from './daily-reward.entity';

/**
 * What PostgreSQL answers the second of two sessions creating one table at once:
 * `CREATE TABLE IF NOT EXISTS` checks, then waits for the other's catalog row and
 * fails on it (unique_violation on pg_type, or duplicate_table).
 */
const CREATED_MEANWHILE = new Set(['23505', '42P07']);

/**
 * Creates the example's table when it is missing. Several instances may start at
 * once (the demo starts two): one that lost the race to another instance finds the
 * table there when it asks again.
 */
export async function ensureDailyRewardsTable(source: DataSource): Promise<void> {
  try {
    await source.query(DAILY_REWARDS_DDL);
  } catch (error) {
    if (!CREATED_MEANWHILE.has(String((error as { code?: unknown }).code))) throw error;
    await source.query(DAILY_REWARDS_DDL);
  }
}
