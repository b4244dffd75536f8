import Redis from 'ioredis';
import { AppStore, type Payment, type Resource, type RewardState } from './app.store';

/** Data in Redis, shared by every instance: plain GET/SET and RPUSH, no scripts or transactions. */
export class RedisAppStore extends AppStore {
  private readonly redis: Redis;

  constructor(url: string, private readonly prefix = 'example-app') {
    super();
    this.redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  }

  async getRewards(userId: string): Promise<RewardState> {
    const raw = await this.redis.hgetall(`${this.prefix}:rewards:${userId}`);
    return { rewardCount: Number(raw.rewardCount ?? 0), lastClaimAt: raw.lastClaimAt ? Number(raw.lastClaimAt) : null };
  }

  async recordClaim(userId: string, at: number): Promise<RewardState> {
    const key = `${this.prefix}:rewards:${userId}`;
    const [[, count]] = (await this.redis
      .multi()
      .hincrby(key, 'rewardCount', 1)
      .hset(key, 'lastClaimAt', at)
      .expire(key, 3600)
      .exec()) as [[null, number]];
    return { rewardCount: count, lastClaimAt: at };
  }

  async listResources(userId: string): Promise<Resource[]> {
    const items = await this.redis.lrange(`${this.prefix}:resources:${userId}`, 0, -1);
    return items.map((item) => JSON.parse(item) as Resource);
  }

  async addResource(resource: Resource): Promise<void> {
    const key = `${this.prefix}:resources:${resource.userId}`;
    await this.redis.rpush(key, JSON.stringify(resource));
    await this.redis.expire(key, 3600);
  }

  async listPayments(accountId: string): Promise<Payment[]> {
    const items = await this.redis.lrange(`${this.prefix}:payments:${accountId}`, 0, -1);
    return items.map((item) => JSON.parse(item) as Payment);
  }

  async addPayment(payment: Payment): Promise<void> {
    const key = `${this.prefix}:payments:${payment.accountId}`;
    await this.redis.rpush(key, JSON.stringify(payment));
    await this.redis.expire(key, 3600);
  }

  override async close(): Promise<void> {
    this.redis.disconnect();
  }
}
