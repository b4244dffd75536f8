import type { Floor } from '../protocol/floor';
import type { HandOffMode } from '../../../acquire-options.interface';
import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import type { DeadlineQueue } from '../../../internal/deadline-queue';
import type { EventLoopStallMonitor } from '../../../internal/event-loop-stall.monitor';
import type { HeldLocks } from '../../../internal/held-locks';
import type { PendingBudget } from '../../../internal/pending-budget';
import type { Lock } from '../../../lock.interface';
import type { OwnerTokens } from '../protocol/owner-tokens';
import type { RedisConnection } from '../transport/redis-connection';
import type { RedisGrantCheck } from './redis-grant-check';
import { RedisCohorts, type CohortHost, type GrantBlock } from '../local-handoff/redis-cohorts';
import { RedisEnqueues, type EnqueueHost } from './redis-enqueues';
import { RedisHandOffs, type HandOffHost } from './redis-hand-offs';
import { RedisKeyWaiters } from './redis-key-waiters';
import type { RedisKeyspace, RedisLockKeys } from '../protocol/redis-keyspace';
import { RedisLeaves } from './redis-leaves';
import type { RedisLock, RedisLockContext } from '../holding/redis-lock';
import { RedisRiders, type RiderHost } from '../local-handoff/redis-riders';
import { RedisHeartbeats, type HeartbeatHost } from './redis-heartbeats';
import type { RedisScripts } from '../protocol/redis-scripts';
import { CONFIRMING, QUEUED, RedisWaiter, SETTLED, type KeyWaiters, type WaitRequest } from './redis-waiter';
import { RedisWaitBudgets, type WaitBudgetHost } from './redis-wait-budgets';
import { RedisWakeUps } from './redis-wake-ups';
import type { HandOff } from '../protocol/hand-off';

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
  readonly handoff: HandOffMode;
  /** Cohort mode's bound on local hand-offs in a row ahead of a known waiter of another process. */
  readonly maxLocalHandOffs: number;
  readonly logger: Logger;
  /** `maxPendingTotal`: a waiter holds a place from its call until it settles. */
  readonly budget: PendingBudget;
}

/**
 * The waiters of this process and their state machine: SENDING (its acquisition
 * on its way) → QUEUED (a place in Redis) → SETTLED (holds the key, or gave up),
 * with CONFIRMING when a hand-off may have run out before it could run (see
 * {@link RedisHandOffs}). Waiters of one key share one heart-beat
 * ({@link RedisHeartbeats}); every hand-off, whatever carried it, comes through
 * {@link handedOver}.
 */
export class RedisWaiters implements HandOffHost, HeartbeatHost, RedisLockContext, WaitBudgetHost, CohortHost, RiderHost, EnqueueHost {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly deadlines: DeadlineQueue;
  readonly leaves: RedisLeaves;
  private readonly handOffs: RedisHandOffs;
  private readonly heartbeats: RedisHeartbeats;
  private readonly wakeUps: RedisWakeUps;
  readonly cohorts: RedisCohorts;
  private readonly riders: RedisRiders;
  /** This process's waiters, per key (only while someone waits). */
  private readonly keys = new Map<string, KeyWaiters>();
  /** This process's waiters, by owner token: where hand-offs find them. */
  private readonly byToken = new Map<string, RedisWaiter>();
  private readonly budgets: RedisWaitBudgets;
  private readonly releases = new Map<string, Promise<unknown>>();
  private readonly enqueues: RedisEnqueues;

  constructor(private readonly parts: RedisWaitersParts) {
    ({ connection: this.connection, scripts: this.scripts, deadlines: this.deadlines } = parts);
    this.budgets = new RedisWaitBudgets(parts.deadlines, parts.connection, this);
    this.handOffs = new RedisHandOffs(this, parts.grants, parts.stalls);
    this.cohorts = new RedisCohorts(parts.handoff, parts.maxLocalHandOffs, this, parts.held, (key) => this.keys.get(key)?.first);
    this.riders = new RedisRiders(this, this.cohorts);
    this.enqueues = new RedisEnqueues(parts.connection, parts.scripts, parts.stalls, this);
    this.leaves = new RedisLeaves(parts.connection, parts.scripts, this, parts.logger);
    this.heartbeats = new RedisHeartbeats(parts.connection, parts.scripts, parts.deadlines, parts.heartbeatMs, this);
    this.wakeUps = new RedisWakeUps(parts.connection, parts.keyspace.channelPrefix + parts.tokens.session, this.handOffs, this);
  }

  /** RedisLockContext: a release on its way, by key, until its reply (see `releaseOf`). */
  releasing(lock: RedisLock, done: Promise<unknown>): void {
    this.releases.set(lock.key, done);
    const forget = () => void (this.releases.get(lock.key) === done && this.releases.delete(lock.key));
    done.then(forget, forget);
  }

  /** This process's release of `key` still on its way to Redis, if any. */
  releaseOf(key: string): Promise<unknown> | undefined {
    return this.releases.get(key);
  }

  /** RedisLockContext: one warning for a loss a lock found at its release. */
  warn(message: string): void {
    this.parts.logger.warn(message);
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
      queue = new RedisKeyWaiters(key, this.parts.keyspace.keysOf(key), this.heartbeats);
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
    if (!this.riders.ride(waiter)) this.enqueue(waiter);
    return waiter.promise;
  }

  /** A script passed the key on (to a waiter of this process, or of another). */
  handedOver(handOff: HandOff, since: number): void {
    if (this.cohorts.handedToServed(handOff.member)) return;
    this.handOffs.handedOver(handOff, since);
  }

  noticed(owner: string, place: number): void {
    const tenureKey = this.cohorts.noticed(owner, place);
    // Handed the key but its news has not come yet (a reply on the other connection, or being
    // confirmed), or the waiter the other process's waiter queued behind.
    const waiter = tenureKey === undefined ? this.byToken.get(owner) : undefined;
    if (waiter) waiter.notice = Math.min(waiter.notice, place);
    const key = tenureKey ?? waiter?.queue.key;
    if (key !== undefined) this.riders.queuedBehind(this.keys.get(key), place);
  }

  get listening(): boolean {
    return this.wakeUps.listening;
  }

  get closing(): boolean {
    return this.parts.held.closing;
  }

  unride(key: string): void {
    this.riders.unride(this.keys.get(key));
  }

  unplace(waiter: RedisWaiter): void {
    this.riders.requeue(this.riders.detach(waiter));
  }

  /** The lock no longer counts as held. */
  released(lock: RedisLock): void {
    this.parts.held.delete(lock);
  }

  /** After a reconnect or (re)subscription: messages may have been lost, so every waiting key is checked now. */
  resync(): void {
    for (const queue of this.keys.values()) this.heartbeats.schedule(queue, -2);
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
    let orphans: RedisWaiter[] | undefined;
    if (waiter.phase === QUEUED) {
      // Leaving its place without the key: the riders behind it lose what they rode on.
      if (!waiter.rider && !waiter.granted) orphans = this.riders.detach(waiter);
      else queue.unlink(waiter);
    } else this.riders.unfollow(waiter);
    if (waiter.rider) queue.riders--;
    waiter.phase = SETTLED;
    queue.pending--;
    this.parts.budget.give();
    this.byToken.delete(waiter.token);
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    if (waiter.onAbort) waiter.signal!.removeEventListener('abort', waiter.onAbort);
    waiter.deadline = waiter.onAbort = undefined;
    if (orphans?.length) this.riders.requeue(orphans);
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
    if (queue.pending > 0 || queue.heartbeating) return;
    if (queue.heartbeat) this.deadlines.cancel(queue.heartbeat);
    queue.heartbeat = undefined;
    if (this.keys.get(queue.key) === queue) this.keys.delete(queue.key);
    if (this.keys.size === 0) this.parts.stalls.stop();
  }

  /** Sends the waiter's acquisition (mode "wait") under its current owner token. */
  enqueue(waiter: RedisWaiter): void {
    this.enqueues.send(waiter);
  }

  /** Its acquisition's reply gave the waiter a place in Redis. */
  placed(waiter: RedisWaiter, holderPttl: number): void {
    waiter.phase = QUEUED;
    waiter.queue.link(waiter);
    this.wakeUps.ensure();
    this.heartbeats.schedule(waiter.queue, holderPttl);
  }

  learned(key: string, floor: Floor): void {
    this.cohorts.learned(key, floor);
  }

  lead(waiter: RedisWaiter): void {
    this.riders.lead(waiter);
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
