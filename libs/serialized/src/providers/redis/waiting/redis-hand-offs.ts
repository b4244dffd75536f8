import { floorOf } from '../protocol/floor';
import { performance } from 'node:perf_hooks';
import { LockTimeoutError } from '../../../errors/index';
import type { EventLoopStallMonitor } from '../../../internal/event-loop-stall.monitor';
import type { Lock } from '../../../lock.interface';
import type { GrantBlock } from '../local-handoff/redis-cohorts';
import type { RedisGrantCheck } from './redis-grant-check';
import type { RedisLockKeys } from '../protocol/redis-keyspace';
import { CONFIRMING, QUEUED, SENDING, SETTLED, type RedisWaiter } from './redis-waiter';
import type { HandOff } from '../protocol/hand-off';

/** What hand-offs need from the provider. */
export interface HandOffHost {
  waiter(token: string): RedisWaiter | undefined;
  /** Every hand-off, whatever carried it, goes through here (see `RedisWaiters.handedOver`). */
  handedOver(handOff: HandOff, since: number): void;
  /** A waiter of another process queued at `place` behind `owner`, a holder of this process. */
  noticed(owner: string, place: number): void;
  /** The waiter is done waiting (it then resolves or rejects; `granted` is set first when it got the key). */
  settle(waiter: RedisWaiter): void;
  /** The waiter's place leaves this process's list without the key (the riders behind it take places of their own). */
  unplace(waiter: RedisWaiter): void;
  /** Gives up `token`'s place, or passes the key on if `token` holds it. Never throws. */
  leave(key: string, keys: RedisLockKeys, token: string): void;
  /** Gives the waiter a new owner token (the old one is then unknown) and sends its acquisition again. */
  enqueueAgain(waiter: RedisWaiter): void;
  /** The held lock for a waiter that got the key, with `px` ms of lease from `since`. */
  lockFor(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): Lock;
}

/**
 * How a hand-off reaches a waiter of this process and when it may run on it.
 *
 * A script makes the waiter the owner and says so by a reply (the release's,
 * the acquisition's, a leave's, a heart-beat's) or by a message on this process's
 * channel. A reply's grant counts from when its command was sent; a message's
 * from when this process's event loop was last known responsive (it answers no
 * request of ours). The waiter runs at once when most of that lease is surely
 * ahead, which is the usual case: one round trip plus the notification. When it
 * may have run out (the event loop stalled past it, the news came late), Redis
 * is asked first; if the key is no longer the waiter's, it never held it, and it
 * waits again at the tail within what is left of its budget, or times out. So a
 * late message or reply never makes this process a holder, and fencing tokens
 * stay strictly increasing in the order holders ran.
 */
export class RedisHandOffs {
  constructor(
    private readonly host: HandOffHost,
    private readonly grants: RedisGrantCheck,
    private readonly stalls: EventLoopStallMonitor,
  ) {}

  /**
   * A script passed the key to `handOff.member`, with `px` ms of lease from no
   * earlier than `since`: if it is a waiter of this process, it now holds the key.
   */
  handedOver(handOff: HandOff, since: number): void {
    const waiter = this.host.waiter(handOff.member);
    // Anyone else: a waiter of another process (told by message), one of ours that
    // gave up (its leave, sent later, passes the key on), or one whose hand-off is
    // being confirmed (Redis decides).
    if (waiter === undefined || waiter.phase === SETTLED || waiter.phase === CONFIRMING) return;
    this.grant(waiter, handOff.fence, handOff.px, since, handOff);
  }

  /**
   * A message on this process's channel: a hand-off "<member> <fence> <px> <last> <floor>",
   * or a notice "<owner> <place>" (a waiter of another process queued behind `owner`).
   */
  onMessage(message: string): void {
    const since = this.stalls.respondedAt();
    const fields = message.split(' ');
    if (fields.length === 2) return this.host.noticed(fields[0], Number(fields[1]));
    if (fields.length !== 5) return;
    const [member, fence, px, last, floor] = fields;
    this.host.handedOver({ member, fence: Number(fence), px: Number(px), last: Number(last), floor: floorOf(floor) }, since);
  }

  /**
   * The key is the waiter's, with `px` ms of lease from no earlier than `since`: it
   * resolves with the lock, or passes the key on if it was just aborted. When the
   * lease may have run out before the waiter could run, Redis is asked first.
   */
  grant(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): void {
    const { key, keys } = waiter.queue;
    if (waiter.signal?.aborted) {
      // Handed over in the same tick the caller gave up: pass it on, never run.
      this.host.settle(waiter);
      waiter.granted = true;
      this.host.leave(key, keys, waiter.token);
      waiter.reject(waiter.signal.reason);
      return;
    }
    if (!this.grants.isFresh(since, px)) {
      this.confirm(waiter, fence);
      return;
    }
    // Granted before settled: the riders behind its place stay, to be served by its tenure.
    waiter.granted = true;
    this.host.settle(waiter);
    waiter.resolve(this.host.lockFor(waiter, fence, px, since, block));
  }

  private confirm(waiter: RedisWaiter, fence: number): void {
    const { key, keys } = waiter.queue;
    const token = waiter.token;
    if (waiter.phase === QUEUED) this.host.unplace(waiter);
    waiter.phase = CONFIRMING;
    waiter.fence = fence;
    this.grants.confirm(key, keys, token, waiter.leaseMs).then(
      (confirmed) => {
        // Gave up meanwhile: its leave, sent after this question, passed the key on.
        if (waiter.phase !== CONFIRMING || waiter.token !== token) return;
        if (typeof confirmed === 'number') this.grant(waiter, fence, waiter.leaseMs, confirmed);
        else this.waitAgain(waiter, confirmed === 'late');
      },
      (error: unknown) => {
        if (waiter.phase !== CONFIRMING || waiter.token !== token) return;
        this.host.settle(waiter);
        waiter.reject(error);
        // It may still hold the key: pass it on (its lease ends it if Redis stays away).
        this.host.leave(key, keys, token);
      },
    );
  }

  /**
   * The waiter has nothing in Redis any more: its hand-off ran out before it could
   * run, or its place was dropped because this process did not heart-beat in time
   * (its own stall, which is no backend failure). It takes a new place at the tail,
   * under a new token, or times out once its budget is spent. `mayHoldKey`: the key
   * may still be its own, so it is passed on first.
   */
  waitAgain(waiter: RedisWaiter, mayHoldKey: boolean): void {
    const { key, keys } = waiter.queue;
    if (mayHoldKey) this.host.leave(key, keys, waiter.token);
    if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      this.host.settle(waiter);
      waiter.reject(new LockTimeoutError(key, waiter.waitTimeoutMs));
      return;
    }
    if (waiter.phase === QUEUED) this.host.unplace(waiter);
    waiter.phase = SENDING;
    waiter.fence = 0;
    this.host.enqueueAgain(waiter);
  }
}
