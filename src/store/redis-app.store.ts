import Redis from 'ioredis';
import { AppStore, type Payment, type Resource, type RewardState } from './app.store';

/**
 * Appends ARGV[2] to the list KEYS[2] unless KEYS[1] holds a larger fence than
 * ARGV[1], then records ARGV[1]: `UPDATE … WHERE fence <= $token` in one step.
 * Fences are compared as decimal strings (exact beyond 2^53).
 */
const FENCED_RPUSH = `
local last = redis.call('GET', KEYS[1])
local fence = ARGV[1]
if last and (#last > #fence or (#last == #fence and last > fence)) then return 0 end
redis.call('SET', KEYS[1], fence, 'EX', ARGV[3])
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1`;

/** Data in Redis, shared by every instance: plain GET/SET and RPUSH; one script for the fenced write. */
export class RedisAppStore extends AppStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix = 'example-app',
  ) {
    super();
    this.redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  }

  async getRewards(userId: string): Promise<RewardState> {
    const raw = await this.redis.hgetall(`${this.prefix}:rewards:${userId}`);
    return { rewardCount: Number(raw.rewardCount ?? 0), lastClaimAt: raw.lastClaimAt ? Number(raw.lastClaimAt) : null };
  }

  async recordClaim(userId: string, at: number): Promise<RewardState> {
    const key = `${this.prefix}:rewards:${userId}`;
    const [[, count]] = (await this.redis.multi().hincrby(key, 'rewardCount', 1).hset(key, 'lastClaimAt', at).expire(key, 3600).exec()) as [
      [null, number],
    ];
    return { rewardCount: count, lastClaimAt: at };
  }

  async listResources(userId: string): Promise<Resource[]> {
    const items = await this.redis.lrange(`${this.prefix}:resources:${userId}`, 0, -1);
    return items.map((item) => JSON.parse(item) as Resource);
  }

  async addResource(resource: Resource, fence?: bigint): Promise<boolean> {
    const key = `${this.prefix}:resources:${resource.userId}`;
    if (fence !== undefined) {
      const written = await this.redis.eval(FENCED_RPUSH, 2, `${key}:fence`, key, fence.toString(), JSON.stringify(resource), 3600);
      return written === 1;
    }
    await this.redis.rpush(key, JSON.stringify(resource));
    await this.redis.expire(key, 3600);
    return true;
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
