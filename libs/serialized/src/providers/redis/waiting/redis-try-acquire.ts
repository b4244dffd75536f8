import { Floor } from '../protocol/floor';
import type { HandOffMode } from '../../../acquire-options.interface';
import { performance } from 'node:perf_hooks';
import { LockBackendError } from '../../../errors/index';
import type { Lock } from '../../../lock.interface';
import type { OwnerTokens } from '../protocol/owner-tokens';
import type { RedisGrantCheck } from './redis-grant-check';
import type { RedisKeyspace, RedisLockKeys } from '../protocol/redis-keyspace';
import type { RedisWaiters } from './redis-waiters';

function noop(): void {}

/**
 * Mode "try": takes the key if it is free and nobody waits, in one round trip,
 * `null` otherwise. Used by `tryAcquire`, `waitTimeoutMs: 0` and `maxPending: 0`.
 */
export class RedisTryAcquire {
  constructor(
    private readonly waiters: RedisWaiters,
    private readonly keyspace: RedisKeyspace,
    private readonly tokens: OwnerTokens,
    private readonly grants: RedisGrantCheck,
  ) {}

  take(key: string, leaseMs: number, signal: AbortSignal | undefined, handoff?: HandOffMode): Promise<Lock | null> {
    // This process's own release of the key is on its way (run() does not wait for it; a script reloaded
    // after NOSCRIPT may reach Redis after a later call): a caller that saw the section end finds the key free.
    const releasing = this.waiters.releaseOf(key);
    if (releasing) return releasing.then(noop, noop).then(() => this.take(key, leaseMs, signal, handoff));
    const { connection, scripts } = this.waiters;
    const keys = this.keyspace.keysOf(key);
    const token = this.tokens.next(leaseMs);
    let sentAt = -Infinity;
    return connection
      .run(key, (client) => {
        sentAt = performance.now();
        return scripts.acquire.run(client, { keys, token, leaseMs, mode: 'try' });
      })
      .then(
        (result) => {
          if (result.handed) this.waiters.handedOver(result.handed, sentAt);
          if (result.status === 'granted') return this.taken(key, keys, token, result.fence, leaseMs, result.pttl, sentAt, signal, result.last, handoff);
          if (result.status === 'twice') {
            this.waiters.leave(key, keys, token);
            throw new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key });
          }
          return null;
        },
        (error: unknown) => {
          // It may have run: undo whatever it took.
          if (connection.mayHaveRun(error)) this.waiters.leave(key, keys, token);
          throw error;
        },
      );
  }

  /** The key was taken: the caller holds it once it is sure the lease still runs. */
  private async taken(
    key: string, keys: RedisLockKeys, token: string, fence: number, leaseMs: number, px: number, since: number, signal: AbortSignal | undefined,
    last: number, handoff: HandOffMode | undefined,
  ): Promise<Lock | null> {
    if (!this.grants.isFresh(since, px)) {
      // The reply came too late to count (a stalled event loop): Redis decides.
      const confirmed = await this.grants.confirm(key, keys, token, leaseMs).catch((error: unknown) => {
        this.waiters.leave(key, keys, token);
        throw error;
      });
      if (typeof confirmed !== 'number') {
        if (confirmed === 'late') this.waiters.leave(key, keys, token);
        return null;
      }
      [px, since] = [leaseMs, confirmed];
    }
    if (signal?.aborted) {
      this.waiters.leave(key, keys, token);
      throw signal.reason;
    }
    return this.waiters.cohorts.grant(key, keys, token, fence, leaseMs, px, since, { last, floor: Floor.NONE }, handoff);
  }
}
