import { Floor } from '../protocol/floor';
import { performance } from 'node:perf_hooks';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../../errors/index';
import type { EventLoopStallMonitor } from '../../../internal/event-loop-stall.monitor';
import type { RedisConnection } from '../transport/redis-connection';
import type { GrantBlock } from '../local-handoff/redis-cohorts';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import type { RedisScripts } from '../protocol/redis-scripts';
import { CONFIRMING, SETTLED, type RedisWaiter } from './redis-waiter';
import type { HandOff } from '../protocol/hand-off';
import type { AcquireResult } from '../protocol/acquire.script';

/** What a waiter's acquisition call needs from the waiter state machine. */
export interface EnqueueHost {
  /** A script passed the key on (to a waiter of this process, or of another). */
  handedOver(handOff: HandOff, since: number): void;
  /** A reply queued a waiter of this process behind a holder of this process (`floor`: the first waiter of another process). */
  learned(key: string, floor: Floor): void;
  /** The key is `waiter`'s, with `px` ms of lease from no earlier than `since`. */
  grantWaiter(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): void;
  /** Its reply gave the waiter a place in Redis (`holderPttl`: what is left of the holder's lease). */
  placed(waiter: RedisWaiter, holderPttl: number): void;
  /** The waiter is done waiting (it then resolves or rejects). */
  settle(waiter: RedisWaiter): void;
  /** A waiter leaves with `error`; `hasPlace`: its place in Redis is given up too. */
  giveUp(waiter: RedisWaiter, error: unknown, hasPlace?: boolean): void;
  /** Gives up `token`'s place, or passes the key on if `token` holds it. Never throws. */
  leave(key: string, keys: RedisLockKeys, token: string): void;
  /** The reply to the waiter's call came, or it failed: those that waited for it ride or queue now. */
  lead(waiter: RedisWaiter): void;
}

/**
 * A waiter's acquisition (the acquire script, mode "wait") and what its reply
 * means: a place, the key, or a call to undo (the waiter gave up meanwhile, or
 * waits under a new token by now).
 */
export class RedisEnqueues {
  constructor(
    private readonly connection: RedisConnection,
    private readonly scripts: RedisScripts,
    private readonly stalls: EventLoopStallMonitor,
    private readonly host: EnqueueHost,
  ) {}

  /** Sends the waiter's acquisition under its current owner token. */
  send(waiter: RedisWaiter): void {
    const { key, keys } = waiter.queue;
    const { token, leaseMs } = waiter;
    waiter.queue.leader = waiter;
    let sentAt = -Infinity;
    // From now on a hand-off message may come for it, and has to be dated.
    this.stalls.start();
    this.connection
      .run(
        key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.acquire.run(client, { keys, token, leaseMs, mode: 'wait' });
        },
        // Given up while still queued in this process: never sent, nothing to undo (`waiter.skip()`).
        waiter,
      )
      .then(
        (result) => {
          this.enqueued(waiter, token, result, sentAt);
          this.host.lead(waiter);
        },
        (error: unknown) => {
          this.enqueueFailed(waiter, token, error);
          this.host.lead(waiter);
        },
      );
  }

  private enqueued(waiter: RedisWaiter, token: string, result: AcquireResult, sentAt: number): void {
    if (result.handed) this.host.handedOver(result.handed, sentAt);
    const { key, keys } = waiter.queue;
    if (result.status === 'queued') this.host.learned(key, result.floor);
    const { status } = result;
    // An earlier attempt of a waiter that now waits under a new token: undo it.
    if (waiter.token !== token) {
      if (status !== 'busy') this.host.leave(key, keys, token);
      return;
    }
    if (waiter.phase === SETTLED) {
      // Handed the key by a message that overtook this reply (nothing to do), or it
      // gave up meanwhile (shutdown): undo what the call took.
      if (!waiter.granted && status !== 'busy') this.host.leave(key, keys, token);
      return;
    }
    // Handed the key by a message that overtook this reply; Redis is being asked whether it still holds.
    if (waiter.phase === CONFIRMING) return;
    if (status === 'granted') return this.host.grantWaiter(waiter, result.fence, result.pttl, sentAt, { last: result.last, floor: Floor.NONE });
    if (status !== 'queued') {
      this.host.settle(waiter);
      waiter.reject(new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key }));
      this.host.leave(key, keys, token);
      return;
    }
    waiter.fence = result.fence;
    // Its budget (started: it has a deadline) ran out while the reply was on its way (see `RedisWaitBudgets.waitEnded`).
    if (waiter.deadline && performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      return this.host.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs), true);
    }
    // It was let through in case it became the holder, and it did not: one waiter too many.
    if (waiter.queue.queued >= waiter.maxPending) {
      return this.host.giveUp(waiter, new LockBusyError(key, 'max-pending', { maxPending: waiter.maxPending }), true);
    }
    // Its deadline and abort listener run since the call; it now has a place.
    this.host.placed(waiter, result.pttl);
  }

  private enqueueFailed(waiter: RedisWaiter, token: string, error: unknown): void {
    const { key, keys } = waiter.queue;
    if (waiter.token === token) {
      // Handed the key by a message that overtook this failure: it holds it.
      if (waiter.granted) return;
      if (waiter.phase !== SETTLED) {
        this.host.settle(waiter);
        waiter.reject(error);
      }
    }
    // It may have run: undo whatever it took.
    if (this.connection.mayHaveRun(error)) this.host.leave(key, keys, token);
  }

}
