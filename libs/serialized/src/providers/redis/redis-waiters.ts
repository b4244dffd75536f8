import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../errors';
import type { DeadlineQueue } from '../../internal/deadline-queue';
import type { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import type { HeldLocks } from '../../internal/held-locks';
import type { PendingBudget } from '../../internal/pending-budget';
import type { Lock } from '../../lock.interface';
import type { OwnerTokens } from './owner-tokens';
import type { RedisConnection } from './redis-connection';
import type { RedisGrantCheck } from './redis-grant-check';
import { RedisCohorts, type CohortHost, type GrantBlock, type RedisHandOffMode } from './redis-cohorts';
import { RedisHandOffs, type HandOffHost } from './redis-hand-offs';
import { RedisKeyWaiters } from './redis-key-waiters';
import type { RedisKeyspace, RedisLockKeys } from './redis-keyspace';
import { RedisLeaves } from './redis-leaves';
import { RedisLock, type RedisLockContext } from './redis-lock';
import { RedisSafetyChecks, type SafetyCheckHost } from './redis-safety-checks';
import type { RedisScripts } from './redis-scripts';
import { CONFIRMING, QUEUED, RedisWaiter, SENDING, SETTLED, type KeyWaiters, type WaitRequest } from './redis-waiter';
import { RedisWaitBudgets, type WaitBudgetHost } from './redis-wait-budgets';
import { RedisWakeUps } from './redis-wake-ups';
import type { AcquireResult } from './scripts/acquire.script';
import type { HandOff } from './scripts/hand-off';

/** What the waiter state machine works with (built once by the provider). */
export interface RedisWaitersParts {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly keyspace: RedisKeyspace;
  readonly tokens: OwnerTokens;
  readonly deadlines: DeadlineQueue;
  readonly held: HeldLocks<RedisLock>;
  readonly grants: RedisGrantCheck;
  readonly stalls: EventLoopStallMonitor;
  readonly heartbeatMs: number;
  readonly handoff: RedisHandOffMode;
  readonly logger: Logger;
  /** `maxPendingTotal`: a waiter holds a place from its call until it settles. */
  readonly budget: PendingBudget;
}

/**
 * The waiters of this process and their state machine: SENDING (its acquisition
 * on its way) → QUEUED (a place in Redis) → SETTLED (holds the key, or gave up),
 * with CONFIRMING when a hand-off may have run out before it could run (see
 * {@link RedisHandOffs}). Waiters of one key share one heart-beat / safety check
 * ({@link RedisSafetyChecks}); every hand-off, whatever carried it, comes through
 * {@link handedOver}.
 */
export class RedisWaiters implements HandOffHost, SafetyCheckHost, RedisLockContext, WaitBudgetHost, CohortHost {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly deadlines: DeadlineQueue;
  readonly leaves: RedisLeaves;
  private readonly handOffs: RedisHandOffs;
  private readonly checks: RedisSafetyChecks;
  private readonly wakeUps: RedisWakeUps;
  readonly cohorts: RedisCohorts;
  /** This process's waiters, per key (only while someone waits). */
  private readonly keys = new Map<string, KeyWaiters>();
  /** This process's waiters, by owner token: where hand-offs find them. */
  private readonly byToken = new Map<string, RedisWaiter>();
  private readonly budgets: RedisWaitBudgets;

  constructor(private readonly parts: RedisWaitersParts) {
    ({ connection: this.connection, scripts: this.scripts, deadlines: this.deadlines } = parts);
    this.budgets = new RedisWaitBudgets(parts.deadlines, parts.connection, this);
    this.handOffs = new RedisHandOffs(this, parts.grants, parts.stalls);
    this.cohorts = new RedisCohorts(parts.handoff, this, parts.held, (key) => this.keys.get(key)?.first);
    this.leaves = new RedisLeaves(parts.connection, parts.scripts, this, parts.logger);
    this.checks = new RedisSafetyChecks(parts.connection, parts.scripts, parts.deadlines, parts.heartbeatMs, this);
    this.wakeUps = new RedisWakeUps(parts.connection, parts.keyspace.channelPrefix + parts.tokens.session, this.handOffs, this);
  }

  /** Keys this process waits for right now. */
  get size(): number {
    return this.keys.size;
  }

  /** Waiters of `key` sending or queued (what `maxPending` bounds). */
  pendingOf(key: string): number {
    return this.keys.get(key)?.pending ?? 0;
  }

  /** A new waiter: its acquisition (mode "wait") is sent now; the budget runs from this call. */
  wait(request: WaitRequest): Promise<Lock> {
    const { key, leaseMs, waitTimeoutMs, signal } = request;
    let queue = this.keys.get(key);
    if (!queue) {
      queue = new RedisKeyWaiters(key, this.parts.keyspace.keysOf(key), this.checks);
      this.keys.set(key, queue);
    }
    queue.pending++;
    const waiter = new RedisWaiter(queue, this.parts.tokens.next(leaseMs), leaseMs, waitTimeoutMs, signal, performance.now());
    [waiter.maxPending, waiter.handoff] = [request.maxPending, request.handoff];
    this.byToken.set(waiter.token, waiter);
    this.budgets.start(waiter);
    if (signal) {
      waiter.onAbort = () => this.giveUp(waiter, signal.reason);
      signal.addEventListener('abort', waiter.onAbort, { once: true });
    }
    if (!this.cohorts.ride(waiter)) this.enqueue(waiter);
    return waiter.promise;
  }

  /** A script passed the key on (to a waiter of this process, or of another). */
  handedOver(handOff: HandOff, since: number): void {
    if (this.cohorts.handedToServed(handOff.member)) return;
    this.handOffs.handedOver(handOff, since);
  }

  noticed(owner: string, place: number): void {
    const waiter = this.cohorts.noticed(owner, place) ? undefined : this.byToken.get(owner);
    // Handed the key, but its news has not come yet (a reply on the other connection, or being confirmed).
    if (waiter) waiter.notice = Math.min(waiter.notice, place);
  }

  get listening(): boolean {
    return this.wakeUps.listening;
  }

  unride(key: string): void {
    for (const waiter of this.keys.get(key)?.takeRiders() ?? []) {
      waiter.phase = SENDING;
      this.enqueue(waiter);
    }
  }

  /** The lock no longer counts as held. */
  released(lock: RedisLock): void {
    this.parts.held.delete(lock);
  }

  /** After a reconnect or (re)subscription: messages may have been lost, so every waiting key is checked now. */
  resync(): void {
    for (const queue of this.keys.values()) this.checks.schedule(queue, -2);
  }

  /** Every waiter fails with `error` (shutdown); their places are given up. */
  rejectAll(error: (key: string) => Error): void {
    for (const waiter of [...this.byToken.values()]) this.giveUp(waiter, error(waiter.queue.key));
  }

  /** Closes the wake-up connection (after the leaves on their way have their answers). */
  async close(): Promise<void> {
    await this.wakeUps.close();
  }

  waiter(token: string): RedisWaiter | undefined {
    return this.byToken.get(token);
  }

  settle(waiter: RedisWaiter): void {
    if (waiter.phase === SETTLED) return;
    const queue = waiter.queue;
    if (waiter.phase === QUEUED) queue.unlink(waiter);
    if (waiter.rider) queue.riders--;
    waiter.phase = SETTLED;
    queue.pending--;
    this.parts.budget.give();
    this.byToken.delete(waiter.token);
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    if (waiter.onAbort) waiter.signal!.removeEventListener('abort', waiter.onAbort);
    waiter.deadline = waiter.onAbort = undefined;
    this.closeKeyIfIdle(queue);
  }

  leave(key: string, keys: RedisLockKeys, token: string): void {
    this.leaves.leave(key, keys, token);
  }

  enqueueAgain(waiter: RedisWaiter): void {
    this.byToken.delete(waiter.token);
    waiter.token = this.parts.tokens.next(waiter.leaseMs);
    this.byToken.set(waiter.token, waiter);
    this.enqueue(waiter);
  }

  lockFor(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): Lock {
    const lock = this.cohorts.grant(waiter.queue.key, waiter.queue.keys, waiter.token, fence, waiter.leaseMs, px, since, block, waiter.handoff);
    this.cohorts.learned(waiter.queue.key, waiter.notice);
    return lock;
  }

  isCurrent(queue: KeyWaiters): boolean {
    return this.keys.get(queue.key) === queue;
  }

  grantWaiter(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock): void {
    this.handOffs.grant(waiter, fence, px, since, block);
  }

  dropWaiter(waiter: RedisWaiter, error: Error): void {
    this.settle(waiter);
    waiter.reject(error);
    if (!waiter.rider) this.leave(waiter.queue.key, waiter.queue.keys, waiter.token);
  }

  lostPlace(waiter: RedisWaiter): void {
    this.handOffs.waitAgain(waiter, false);
  }

  closeKeyIfIdle(queue: KeyWaiters): void {
    if (queue.pending > 0 || queue.checking) return;
    if (queue.check) this.deadlines.cancel(queue.check);
    queue.check = undefined;
    if (this.keys.get(queue.key) === queue) this.keys.delete(queue.key);
    if (this.keys.size === 0) this.parts.stalls.stop();
  }

  /** Sends the waiter's acquisition (mode "wait") under its current owner token. */
  private enqueue(waiter: RedisWaiter): void {
    const { key, keys } = waiter.queue;
    const { token, leaseMs } = waiter;
    let sentAt = -Infinity;
    // From now on a hand-off message may come for it, and has to be dated.
    this.parts.stalls.start();
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
        (result) => this.enqueued(waiter, token, result, sentAt),
        (error: unknown) => this.enqueueFailed(waiter, token, error),
      );
  }

  private enqueued(waiter: RedisWaiter, token: string, result: AcquireResult, sentAt: number): void {
    if (result.handed) this.handedOver(result.handed, sentAt);
    const { key, keys } = waiter.queue;
    if (result.status === 'queued') this.cohorts.learned(key, result.floor);
    const { status } = result;
    // An earlier attempt of a waiter that now waits under a new token: undo it.
    if (waiter.token !== token) {
      if (status !== 'busy') this.leave(key, keys, token);
      return;
    }
    if (waiter.phase === SETTLED) {
      // Handed the key by a message that overtook this reply (nothing to do), or it
      // gave up meanwhile (shutdown): undo what the call took.
      if (!waiter.granted && status !== 'busy') this.leave(key, keys, token);
      return;
    }
    // Handed the key by a message that overtook this reply; Redis is being asked whether it still holds.
    if (waiter.phase === CONFIRMING) return;
    if (status === 'granted') return this.handOffs.grant(waiter, result.fence, result.pttl, sentAt, { last: result.last, floor: 0 });
    if (status !== 'queued') {
      this.settle(waiter);
      waiter.reject(new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key }));
      this.leave(key, keys, token);
      return;
    }
    waiter.fence = result.fence;
    // Its budget (started: it has a deadline) ran out while the reply was on its way (see `RedisWaitBudgets.waitEnded`).
    if (waiter.deadline && performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      return this.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs), true);
    }
    // It was let through in case it became the holder, and it did not: one waiter too many.
    if (waiter.queue.queued >= waiter.maxPending) {
      return this.giveUp(waiter, new LockBusyError(key, 'max-pending', { maxPending: waiter.maxPending }), true);
    }
    // Its deadline and abort listener run since the call; it now has a place.
    waiter.phase = QUEUED;
    waiter.queue.link(waiter);
    this.wakeUps.ensure();
    this.checks.schedule(waiter.queue, result.pttl);
  }

  private enqueueFailed(waiter: RedisWaiter, token: string, error: unknown): void {
    const { key, keys } = waiter.queue;
    if (waiter.token === token) {
      // Handed the key by a message that overtook this failure: it holds it.
      if (waiter.granted) return;
      if (waiter.phase !== SETTLED) {
        this.settle(waiter);
        waiter.reject(error);
      }
    }
    // It may have run: undo whatever it took.
    if (this.connection.mayHaveRun(error)) this.leave(key, keys, token);
  }

  /** A waiter leaves: rejected at once; its place in Redis is given up behind the scenes. */
  giveUp(waiter: RedisWaiter, error: unknown, hasPlace = (waiter.phase === QUEUED && !waiter.rider) || waiter.phase === CONFIRMING): void {
    if (waiter.phase === SETTLED) return;
    this.settle(waiter);
    waiter.reject(error);
    // A waiter still sending is undone when its reply arrives.
    if (hasPlace) this.leave(waiter.queue.key, waiter.queue.keys, waiter.token);
  }
}
