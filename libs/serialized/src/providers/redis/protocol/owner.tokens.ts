import { randomBytes, randomFillSync } from 'node:crypto';

const POOL_BYTES = 1536;
const RANDOM_BYTES = 6;

/**
 * Owner tokens, one per acquisition: `<session>:<leaseMs>:<sequence>.<random>`.
 * The session (random, per provider) names the process's wake-up channel; the
 * lease tells a releasing process how long to grant on hand-off; sequence and
 * random part make every token unique and unguessable. Random bytes come from a
 * pool refilled in bulk, so a token costs no system call.
 */
export class OwnerTokens {
  /** Random id of this provider instance (base64url, no `:`). */
  readonly session = randomBytes(9).toString('base64url');
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private offset = POOL_BYTES;
  private sequence = 0;

  next(leaseMs: number): string {
    if (this.offset + RANDOM_BYTES > POOL_BYTES) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const random = this.pool.toString('base64url', this.offset, (this.offset += RANDOM_BYTES));
    return `${this.session}:${leaseMs}:${(++this.sequence).toString(36)}.${random}`;
  }
}
