import { Pool } from 'pg';
import { AppStore, type Payment, type Resource, type RewardState } from './app.store';

/**
 * Data in PostgreSQL, shared by every instance. The tables deliberately have no
 * unique constraint on (user_id, name): duplicates are what serialization prevents.
 */
export class PostgresAppStore extends AppStore {
  private readonly pool: Pool;
  private ready: Promise<void> | undefined;

  constructor(connectionString: string) {
    super();
    this.pool = new Pool({ connectionString, max: 10, application_name: 'example-app' });
  }

  private schema(): Promise<void> {
    this.ready ??= (async () => {
      const client = await this.pool.connect();
      try {
        // Two instances starting together: serialize the DDL itself.
        await client.query('SELECT pg_advisory_lock(7349120811)');
        await client.query(`CREATE TABLE IF NOT EXISTS example_rewards (
          user_id text PRIMARY KEY, reward_count integer NOT NULL, last_claim_at bigint)`);
        await client.query(`CREATE TABLE IF NOT EXISTS example_resources (
          id text PRIMARY KEY, user_id text NOT NULL, name text NOT NULL, created_at bigint NOT NULL)`);
        await client.query(`CREATE TABLE IF NOT EXISTS example_resource_fences (
          user_id text PRIMARY KEY, fence bigint NOT NULL)`);
        await client.query(`CREATE TABLE IF NOT EXISTS example_payments (
          id text PRIMARY KEY, account_id text NOT NULL, amount integer NOT NULL, currency text NOT NULL, created_at bigint NOT NULL)`);
        await client.query('SELECT pg_advisory_unlock(7349120811)');
      } finally {
        client.release();
      }
    })().catch((error) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  async getRewards(userId: string): Promise<RewardState> {
    await this.schema();
    const { rows } = await this.pool.query('SELECT reward_count, last_claim_at FROM example_rewards WHERE user_id = $1', [userId]);
    if (!rows.length) return { rewardCount: 0, lastClaimAt: null };
    return { rewardCount: rows[0].reward_count, lastClaimAt: rows[0].last_claim_at === null ? null : Number(rows[0].last_claim_at) };
  }

  async recordClaim(userId: string, at: number): Promise<RewardState> {
    await this.schema();
    const { rows } = await this.pool.query(
      `INSERT INTO example_rewards (user_id, reward_count, last_claim_at) VALUES ($1, 1, $2)
       ON CONFLICT (user_id) DO UPDATE SET reward_count = example_rewards.reward_count + 1, last_claim_at = $2
       RETURNING reward_count`,
      [userId, at],
    );
    return { rewardCount: rows[0].reward_count, lastClaimAt: at };
  }

  async listResources(userId: string): Promise<Resource[]> {
    await this.schema();
    const { rows } = await this.pool.query(
      'SELECT id, user_id, name, created_at FROM example_resources WHERE user_id = $1 ORDER BY created_at, id',
      [userId],
    );
    return rows.map((r) => ({ id: r.id, userId: r.user_id, name: r.name, createdAt: Number(r.created_at) }));
  }

  async addResource(resource: Resource, fence?: bigint): Promise<boolean> {
    await this.schema();
    const values = [resource.id, resource.userId, resource.name, resource.createdAt];
    if (fence === undefined) {
      await this.pool.query('INSERT INTO example_resources (id, user_id, name, created_at) VALUES ($1, $2, $3, $4)', values);
      return true;
    }
    // One statement: the fence moves forward only if no larger one was written, and the row goes in only if it moved.
    const { rowCount } = await this.pool.query(
      `WITH fenced AS (
         INSERT INTO example_resource_fences (user_id, fence) VALUES ($2, $5)
         ON CONFLICT (user_id) DO UPDATE SET fence = EXCLUDED.fence WHERE example_resource_fences.fence <= EXCLUDED.fence
         RETURNING 1)
       INSERT INTO example_resources (id, user_id, name, created_at) SELECT $1, $2, $3, $4 FROM fenced`,
      [...values, fence.toString()],
    );
    return rowCount === 1;
  }

  async listPayments(accountId: string): Promise<Payment[]> {
    await this.schema();
    const { rows } = await this.pool.query(
      'SELECT id, account_id, amount, currency, created_at FROM example_payments WHERE account_id = $1 ORDER BY created_at, id',
      [accountId],
    );
    return rows.map((r) => ({
      id: r.id,
      accountId: r.account_id,
      amount: r.amount,
      currency: r.currency,
      status: 'succeeded',
      createdAt: Number(r.created_at),
    }));
  }

  async addPayment(payment: Payment): Promise<void> {
    await this.schema();
    await this.pool.query('INSERT INTO example_payments (id, account_id, amount, currency, created_at) VALUES ($1, $2, $3, $4, $5)', [
      payment.id,
      payment.accountId,
      payment.amount,
      payment.currency,
      payment.createdAt,
    ]);
  }

  override async close(): Promise<void> {
    await this.pool.end();
  }
}
