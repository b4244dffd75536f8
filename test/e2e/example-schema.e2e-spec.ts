import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { DAILY_REWARDS_DDL, DailyReward } from '../../src/rewards-tx/daily-reward.entity';
import { ensureDailyRewardsTable } from '../../src/rewards-tx/daily-rewards.schema';
import { TEST_DATABASE_URL } from '../support/services';
import { uniqueId, waitFor } from '../support/timing';

/**
 * The example app's transactional rewards table is created at start-up, and the demo
 * starts two instances at once. `CREATE TABLE IF NOT EXISTS` is not atomic against
 * another session creating the same table: the second one waits for the first one's
 * catalog row and then fails with a unique violation (seen in `npm run demo` on a
 * fresh database). Here the other session is held open on purpose, so the race is
 * the same every run.
 */
describe('example app: creating the rewards table while another instance creates it', () => {
  const schema = uniqueId('schema_race')
    .replace(/[^a-z0-9_]/gi, '_')
    .toLowerCase();
  const inSchema = `-c search_path=${schema}`;
  let admin: Client;

  beforeAll(async () => {
    admin = new Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
  });

  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  it('starts up once the other instance has created it, instead of failing', async () => {
    const other = new Client({ connectionString: TEST_DATABASE_URL, options: inSchema });
    await other.connect();
    const applicationName = uniqueId('schema-race');
    const source = new DataSource({
      type: 'postgres',
      url: TEST_DATABASE_URL,
      entities: [DailyReward],
      extra: { max: 1, options: inSchema, application_name: applicationName },
    });
    await source.initialize();
    try {
      // The other instance is creating the table, not yet committed.
      await other.query('BEGIN');
      await other.query(DAILY_REWARDS_DDL);
      const created = ensureDailyRewardsTable(source).then(
        () => 'started',
        (error: { code?: string; message: string }) => `failed: ${error.code} ${error.message}`,
      );
      // This instance's statement waits for the other one's catalog row.
      await waitFor(
        async () =>
          (await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [applicationName]))
            .rowCount === 1,
        10_000,
        'the start-up DDL waiting for the other instance',
      );
      await other.query('COMMIT');
      expect(await created).toBe('started');
      const { rows } = await admin.query('SELECT to_regclass($1) IS NOT NULL AS present', [`${schema}.example_daily_rewards`]);
      expect(rows[0].present).toBe(true);
    } finally {
      await other.end();
      await source.destroy();
    }
  });
});
