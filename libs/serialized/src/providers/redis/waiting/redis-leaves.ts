import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import { URGENT, type RedisConnection } from '../transport/redis-connection';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import type { RedisScripts } from '../protocol/redis-scripts';
import type { HandOff } from '../protocol/hand-off';

/** Told when a leave passed the key on. */
export interface HandOffSink {
  handedOver(handOff: HandOff, since: number): void;
}

/**
 * Giving up places (and keys handed over meanwhile) behind the scenes: a caller
 * that leaves is answered at once, its place in Redis is given up by a `leave`
 * call it does not wait for. Shutdown waits for those still on their way.
 */
export class RedisLeaves {
  private readonly onTheirWay = new Set<Promise<void>>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly scripts: RedisScripts,
    private readonly handOffs: HandOffSink,
    private readonly logger: Logger,
  ) {}

  /** Leaves the queue, or passes the key on if it was handed over meanwhile. Never throws. */
  leave(key: string, keys: RedisLockKeys, token: string): void {
    let sentAt = -Infinity;
    const call = this.connection
      .run(
        key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.leave.run(client, keys, token);
        },
        URGENT,
      )
      .then(
        (result) => {
          if (result.handed) this.handOffs.handedOver(result.handed, sentAt);
        },
        (error: unknown) => {
          // The place expires with its heart-beats, a grant with its lease.
          this.logger.debug(`Could not leave the queue of lock "${key}": ${(error as Error)?.message ?? error}`);
        },
      )
      .finally(() => this.onTheirWay.delete(call));
    this.onTheirWay.add(call);
  }

  /** Resolves once every leave sent so far has its answer. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.onTheirWay]);
  }
}
