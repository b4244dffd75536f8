import { performance } from 'node:perf_hooks';
import { LockBackendError } from '../../../errors/index';
import type { DeadlineQueue } from '../../../internal/deadline-queue';
import type { GrantBlock } from '../local-handoff/redis-cohorts';
import { URGENT, type RedisConnection } from '../transport/redis-connection';
import type { RedisScripts } from '../protocol/redis-scripts';
import { QUEUED, type KeyWaiters, type RedisWaiter } from './redis-waiter';
import type { HeartbeatResult } from '../protocol/heartbeat.script';
import type { HandOff } from '../protocol/hand-off';

/** What the checks need from the waiter state machine. */
export interface HeartbeatHost {
  /** The process's waiters of `queue.key` are still this `queue`. */
  isCurrent(queue: KeyWaiters): boolean;
  waiter(token: string): RedisWaiter | undefined;
  /** A script passed the key on; its lease started no earlier than `since`. */
  handedOver(handOff: HandOff, since: number): void;
  /** The key is `waiter`'s, with `px` ms of lease from no earlier than `since`. */
  grantWaiter(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): void;
  /** The waiter is done waiting (rejected with `error`); its place in Redis is given up too. */
  dropWaiter(waiter: RedisWaiter, error: Error): void;
  /** The waiter's place is gone from Redis (it was not granted the key): it waits again or times out. */
  lostPlace(waiter: RedisWaiter): void;
  closeKeyIfIdle(queue: KeyWaiters): void;
}

/**
 * One heart-beat per key and process for all of its waiters:
 * every `heartbeatMs / 3`, and when the holder's lease would end. It keeps their
 * places alive, passes on a key whose holder's lease ran out, and finds what a
 * missed hand-off message said. No waiter polls.
 */
export class RedisHeartbeats {
  private readonly intervalMs: number;

  constructor(
    private readonly connection: RedisConnection,
    private readonly scripts: RedisScripts,
    private readonly deadlines: DeadlineQueue,
    heartbeatMs: number,
    private readonly host: HeartbeatHost,
  ) {
    this.intervalMs = heartbeatMs / 3;
  }

  /**
   * Plans the key's next check: after a third of the heart-beat timeout, or when
   * the holder's lease would end (`holderPttl`; -2: no holder, check now),
   * whichever comes first.
   */
  schedule(queue: KeyWaiters, holderPttl: number): void {
    if (queue.places === 0) return;
    let delay = this.intervalMs;
    if (holderPttl === -2) delay = 0; // no holder: someone must pass the key on
    else if (holderPttl >= 0 && holderPttl + 2 < delay) delay = holderPttl + 2;
    const at = performance.now() + delay;
    if (queue.heartbeating) {
      queue.heartbeatAgainAt = Math.min(queue.heartbeatAgainAt, at);
      return;
    }
    if (queue.heartbeat) {
      if (queue.heartbeat.at <= at) return;
      this.deadlines.cancel(queue.heartbeat);
    }
    queue.heartbeat = this.deadlines.schedule(delay, queue.fireHeartbeat);
  }

  /** Checks the key now (its deadline fired). */
  run(queue: KeyWaiters): void {
    if (queue.places === 0 || queue.heartbeating || !this.host.isCurrent(queue)) return;
    queue.heartbeating = true;
    queue.heartbeatAgainAt = Infinity;
    const tokens = queue.tokens();
    let sentAt = -Infinity;
    this.connection
      .run(
        queue.key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.heartbeat.run(client, queue.keys, tokens);
        },
        URGENT,
      )
      .then(
        (result) => this.checked(queue, result, sentAt),
        (error: unknown) => this.failed(queue, error),
      );
  }

  private checked(queue: KeyWaiters, result: HeartbeatResult, sentAt: number): void {
    const host = this.host;
    queue.heartbeating = false;
    // What the reply says held when the check ran, no earlier than when it was sent.
    if (result.handed) host.handedOver(result.handed, sentAt);
    const ours = result.owner ? host.waiter(result.owner) : undefined;
    // Handed the key by a message this process missed.
    // Its fencing tokens are the fresh block the check reserved for it.
    if (ours && ours.phase === QUEUED && result.ownerBlock.fence > 0) {
      host.grantWaiter(ours, result.ownerBlock.fence, result.pttl, sentAt, result.ownerBlock);
    }
    // Neither queued nor holding: passed over after missing its heart-beats (this
    // process stalled), or handed a key whose lease ran out before it could run.
    for (const token of result.missing) {
      const lost = token === result.owner ? undefined : host.waiter(token);
      if (lost && lost.phase === QUEUED) host.lostPlace(lost);
    }
    if (queue.places === 0) {
      host.closeKeyIfIdle(queue);
      return;
    }
    const recheck = queue.heartbeatAgainAt - performance.now();
    queue.heartbeatAgainAt = Infinity;
    this.schedule(queue, Math.min(result.pttl === -2 ? -2 : result.pttl, Number.isFinite(recheck) ? Math.max(0, recheck - 2) : Infinity));
  }

  /** Redis could not be asked: its waiters cannot know their turn, so they fail closed. */
  private failed(queue: KeyWaiters, error: unknown): void {
    queue.heartbeating = false;
    // Riders too: their tenure cannot renew without Redis either. From the last: a rider
    // goes before the place it rides on would send it to Redis for a place of its own.
    for (let waiter = queue.last; waiter; waiter = queue.last) {
      // Its place expires with its heart-beats if Redis stays away.
      this.host.dropWaiter(
        waiter,
        new LockBackendError(`Lost contact with Redis while waiting: ${(error as Error)?.message ?? error}`, { key: queue.key, cause: error }),
      );
    }
    this.host.closeKeyIfIdle(queue);
  }
}
