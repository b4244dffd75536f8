import { AppStore, type Payment, type Resource, type RewardState } from './app.store';

/** Data in this process. Reads and writes still cross an `await`, as a database call would. */
export class InMemoryAppStore extends AppStore {
  private readonly rewards = new Map<string, RewardState>();
  private readonly resources = new Map<string, Resource[]>();
  private readonly payments = new Map<string, Payment[]>();
  /** Largest fence written per user: the in-process `UPDATE … WHERE fence <= $token`. */
  private readonly resourceFences = new Map<string, bigint>();

  async getRewards(userId: string): Promise<RewardState> {
    await tick();
    return { ...(this.rewards.get(userId) ?? { rewardCount: 0, lastClaimAt: null }) };
  }

  async recordClaim(userId: string, at: number): Promise<RewardState> {
    await tick();
    const state = { rewardCount: (this.rewards.get(userId)?.rewardCount ?? 0) + 1, lastClaimAt: at };
    this.rewards.set(userId, state);
    return { ...state };
  }

  async listResources(userId: string): Promise<Resource[]> {
    await tick();
    return [...(this.resources.get(userId) ?? [])];
  }

  async addResource(resource: Resource, fence?: bigint): Promise<boolean> {
    await tick();
    if (fence !== undefined) {
      if ((this.resourceFences.get(resource.userId) ?? fence) > fence) return false;
      this.resourceFences.set(resource.userId, fence);
    }
    this.resources.set(resource.userId, [...(this.resources.get(resource.userId) ?? []), resource]);
    return true;
  }

  async listPayments(accountId: string): Promise<Payment[]> {
    await tick();
    return [...(this.payments.get(accountId) ?? [])];
  }

  async addPayment(payment: Payment): Promise<void> {
    await tick();
    this.payments.set(payment.accountId, [...(this.payments.get(payment.accountId) ?? []), payment]);
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
