/** A user's reward state. */
export interface RewardState {
  rewardCount: number;
  lastClaimAt: number | null;
}

/** A resource a user created. */
export interface Resource {
  id: string;
  userId: string;
  name: string;
  createdAt: number;
}

/** A payment an account made. */
export interface Payment {
  id: string;
  accountId: string;
  amount: number;
  currency: string;
  status: 'succeeded';
  createdAt: number;
}

/**
 * Where the example app keeps its data. Every method is a plain read or a plain
 * write — no transaction, no unique constraint, no compare-and-set — so a handler
 * that reads, checks and then writes races when duplicates arrive together. The
 * store is shared by every instance (Redis or PostgreSQL) so the race is real
 * across processes too.
 */
export abstract class AppStore {
  abstract getRewards(userId: string): Promise<RewardState>;
  /** Credits one reward: an atomic increment (like Mongo's `$inc`), so every granted claim counts. */
  abstract recordClaim(userId: string, at: number): Promise<RewardState>;
  abstract listResources(userId: string): Promise<Resource[]>;
  /**
   * Adds a resource. With `fence` (the fencing token of the lock its writer held)
   * the write is fenced: it happens only if no write with a larger fence has been
   * made for that user, else nothing is written and it returns false — a holder
   * that lost its lock (paused past its lease) cannot write after its successor.
   */
  abstract addResource(resource: Resource, fence?: bigint): Promise<boolean>;
  abstract listPayments(accountId: string): Promise<Payment[]>;
  abstract addPayment(payment: Payment): Promise<void>;
  async close(): Promise<void> {}
}
