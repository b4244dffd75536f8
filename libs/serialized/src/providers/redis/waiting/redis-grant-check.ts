import { performance } from 'node:perf_hooks';
import { URGENT, type RedisConnection } from '../transport/redis-connection';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import type { RedisScripts } from '../protocol/redis-scripts';

/**
 * What Redis said when asked whether a grant still stands: the lease's new start
 * (`performance.now()` time of the question) when it does, `'lost'` when the key
 * is no longer the token's, `'late'` when it was every time but each answer came
 * back too late to count (the key may still be the token's: pass it on).
 */
export type GrantConfirmation = number | 'lost' | 'late';

/** How often a confirmation whose answer came too late is asked again. */
const MAX_ASKS = 3;

/**
 * Ownership is confirmed, never assumed (DESIGN, semantics 11). A grant reaches
 * this process as a reply (counted from when its command was *sent*) or as a
 * message (counted from when the event loop was last known responsive, see
 * `EventLoopStallMonitor`). A grant whose lease may have run out by the time the
 * caller would run is not given to it as it is: Redis is asked first, with an
 * owner-checked extension whose lease counts from when the question was sent.
 *
 * The bar is the renewal point: a caller is given a lock with at least two thirds
 * of its lease ahead, as right after a renewal. A hand-off read at once (the
 * usual case) is far from it and costs no extra round trip.
 */
export class RedisGrantCheck {
  constructor(
    private readonly connection: RedisConnection,
    private readonly scripts: RedisScripts,
  ) {}

  /** Whether a lease of `px` ms that started no earlier than `since` can be given to a caller as it is. */
  isFresh(since: number, px: number): boolean {
    return performance.now() - since <= px / 3;
  }

  /**
   * Asks Redis whether `token` still holds the key, extending its lease to `px`
   * (owner-checked) if so. Rejects (`LockBackendError`) when Redis cannot be asked;
   * the key may then still be the token's.
   */
  async confirm(key: string, keys: RedisLockKeys, token: string, px: number): Promise<GrantConfirmation> {
    for (let ask = 0; ask < MAX_ASKS; ask++) {
      let sentAt = -Infinity;
      const ours = await this.connection.run(
        key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.extend.run(client, keys.lock, token, px);
        },
        URGENT,
      );
      if (!ours) return 'lost';
      if (this.isFresh(sentAt, px)) return sentAt;
    }
    return 'late';
  }
}
