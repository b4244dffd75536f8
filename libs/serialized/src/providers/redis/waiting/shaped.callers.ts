import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import { LockBackendError, LockTimeoutError } from '../../../errors/index';
import type { Deadline, DeadlineQueue } from '../../../internal/deadline.queue';
import type { EventLoopStallMonitor } from '../../../internal/event-loop-stall.monitor';
import type { LineCaller } from '../../../local/line.caller';
import type { LockLines } from '../../../local/lock.lines';
import { RedisLock } from '../holding/redis.lock';
import type { HandOff } from '../protocol/hand-off.reply';
import type { OwnerTokens } from '../protocol/owner.tokens';
import * as commands from '../protocol/redis.commands';
import type { RedisKeyspace, RedisLockKeys } from '../protocol/redis.keyspace';
import type { RedisScripts } from '../protocol/redis.scripts';
import type { ShapedHeartbeatResult } from '../protocol/shaped.scripts';
import { URGENT, type RedisConnection } from '../transport/redis.connection';
import type { ReplicaAcks } from '../transport/replica.acks';
import type { RedisWakeUps } from './redis.wake-ups';
import { ShapedWaiter } from './shaped.waiter';

/** What the shaped callers work with: the backend's parts. */
export interface ShapedCallersParts {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly keyspace: RedisKeyspace;
  readonly tokens: OwnerTokens;
  readonly deadlines: DeadlineQueue;
  readonly stalls: EventLoopStallMonitor;
  readonly heartbeatMs: number;
  readonly leaseMs: number;
  readonly logger: Logger;
  readonly replicas?: ReplicaAcks;
}

/** One key's shaped waiters with a place in Redis, in this process: one heart-beat for all of them. */
class ShapedKey {
  readonly waiters = new Set<ShapedWaiter>();
  private planned: Deadline | undefined;
  private beating = false;

  constructor(
    readonly key: string,
    readonly keys: RedisLockKeys,
  ) {}

  get heartbeat(): Deadline | undefined {
    return this.planned;
  }

  get heartbeating(): boolean {
    return this.beating;
  }

  plan(beat: Deadline | undefined): void {
    this.planned = beat;
  }

  beat(on: boolean): void {
    this.beating = on;
  }
}

/**
 * The Redis backend's callers that hold a key beside others (`concurrency` > 1,
 * `shared`; docs/protocol.md, "Several holders of one key"). Each asks Redis on
 * arrival (shaped-acquire.lua): it holds the key at once, or takes a place in the
 * key's one queue, in global order of arrival beside plain waiters. Its grant is
 * made at Redis by whichever script frees room (a release, a leave, a heart-beat
 * that finds a lapsed holder) and reaches it as a message on this process's channel,
 * or through this process's heart-beat when the message was missed. Every grant
 * has its own fencing token and lease; nothing is handed on in-process. A grant
 * that may have run out before the waiter could run is confirmed first (an
 * owner-checked renewal), as for plain waiters.
 */
export class ShapedCallers {
  private readonly byToken = new Map<string, ShapedWaiter>();
  private readonly byCaller = new Map<LineCaller<RedisLock>, ShapedWaiter>();
  private readonly keys = new Map<string, ShapedKey>();
  private readonly recheckMs: number;

  constructor(
    private readonly parts: ShapedCallersParts,
    /** The provider's lines: where the locks let go. */
    private readonly lines: () => Pick<LockLines<RedisLock>, 'released' | 'waitsThere'>,
    /** The wake-up channel, where grants come as messages. */
    private readonly wakeUps: RedisWakeUps,
    /** A script passed a key to a plain waiter on its way: the backend's own hand-off path takes it. */
    private readonly handedOn: (handOff: HandOff, since: number) => void,
    /** No shaped caller waits any more: the backend stops the stall monitor if none of its own waits either. */
    private readonly quiet: () => void,
  ) {
    this.recheckMs = Math.max(10, parts.connection.timeoutMs / 8);
  }

  /** Whether a shaped caller of this process waits for `key` (plain local hand-offs then stop: they would pass it). */
  waits(key: string): boolean {
    return this.keys.has(key);
  }

  /** No shaped caller of this process waits. */
  get idle(): boolean {
    return this.keys.size === 0 && this.byToken.size === 0;
  }

  /** Whether `caller` is one of these (a shaped caller still waiting). */
  has(caller: LineCaller<RedisLock>): boolean {
    return this.byCaller.has(caller);
  }

  /** A shaped try arrived: answered at once, the lock or `null`. */
  take(caller: LineCaller<RedisLock>): Promise<RedisLock | null> {
    return this.tryTake(this.waiterOf(caller));
  }

  /** A shaped waiter arrived: its caller is told when it holds the key (or may not). */
  askOnArrival(caller: LineCaller<RedisLock>): void {
    const waiter = this.waiterOf(caller);
    this.byToken.set(waiter.token, waiter);
    this.byCaller.set(caller, waiter);
    this.parts.stalls.start();
    this.send(waiter);
  }

  private waiterOf(caller: LineCaller<RedisLock>): ShapedWaiter {
    const leaseMs = caller.leaseMs ?? this.parts.leaseMs;
    return new ShapedWaiter(caller.key, this.parts.keyspace.keysOf(caller.key), this.parts.tokens.next(leaseMs), leaseMs, caller);
  }

  /** The caller left (timeout, abort, shutdown): its place, or a grant on its way, is given up. */
  withdraw(caller: LineCaller<RedisLock>, error: unknown): void {
    const waiter = this.byCaller.get(caller);
    if (waiter) this.giveUp(waiter, error);
  }

  /** Its budget ran out while its acquisition is unanswered and Redis answered nothing since: look again shortly. */
  overdue(caller: LineCaller<RedisLock>): number | undefined {
    const waiter = this.byCaller.get(caller);
    if (!waiter || waiter.phase !== 'sending' || this.parts.connection.answeredSince(caller.key, caller.startedAt)) return undefined;
    return this.recheckMs;
  }

  /** A grant for `handOff.member` (a message, or a heart-beat's reply): true when it is one of these waiters' tokens. */
  granted(handOff: HandOff, since: number): boolean {
    const waiter = this.byToken.get(handOff.member);
    if (waiter === undefined) return false;
    if (waiter.phase === 'sending' || waiter.phase === 'queued') this.grant(waiter, handOff.fence, handOff.px, since);
    return true;
  }

  /** After a (re)subscription messages may have been lost: every key heart-beats now. */
  resync(): void {
    for (const share of this.keys.values()) this.schedule(share, 0);
  }

  /** A shaped holder lets go: shaped-release.lua frees its place and passes on what it freed. */
  release(lock: RedisLock): Promise<undefined> {
    return commands
      .dated(this.parts, lock.key, (client) => this.parts.scripts.shapedRelease.run(client, lock.keys, lock.token), URGENT)
      .then(({ reply, sentAt }) => {
        if (!reply.held) {
          const lost = lock.lostAtRelease();
          if (lost) this.parts.logger.warn(lost.message);
        }
        if (reply.handed) this.handedOn(reply.handed, sentAt);
        return undefined;
      });
  }

  // ---- a waiter's life --------------------------------------------------------------

  private tryTake(waiter: ShapedWaiter): Promise<RedisLock | null> {
    const { key, keys, token } = waiter;
    return commands
      .dated(this.parts, key, (client) => this.parts.scripts.shapedAcquire.run(client, keys, token, waiter.leaseMs, 'try', waiter.limit))
      .then(
        async ({ reply, sentAt }) => {
          if (reply.handed) this.handedOn(reply.handed, sentAt);
          if (reply.status === 'busy') return null;
          if (reply.status === 'twice') {
            this.leave(key, keys, token);
            throw new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key });
          }
          let [px, since] = [reply.pttl, sentAt];
          if (!commands.isFresh(since, px) || this.parts.replicas) {
            const confirmed = await commands
              .confirm(this.parts, key, keys, token, waiter.leaseMs, reply.fence, true)
              .catch((error: unknown) => {
                this.leave(key, keys, token);
                throw error;
              });
            if (typeof confirmed !== 'number') {
              this.leave(key, keys, token);
              return null;
            }
            [px, since] = [waiter.leaseMs, confirmed];
          }
          if (waiter.signal?.aborted) {
            this.leave(key, keys, token);
            throw waiter.signal.reason;
          }
          return this.lockOf(waiter, reply.fence, px, since);
        },
        (error: unknown) => {
          if (this.parts.connection.mayHaveRun(error)) this.leave(key, keys, token);
          throw error;
        },
      );
  }

  private send(waiter: ShapedWaiter): void {
    const { key, keys } = waiter;
    const token = waiter.token;
    commands
      .dated(
        this.parts,
        key,
        (client) => this.parts.scripts.shapedAcquire.run(client, keys, token, waiter.leaseMs, 'wait', waiter.limit),
        waiter,
      )
      .then(
        ({ reply, sentAt }) => {
          if (reply.handed) this.handedOn(reply.handed, sentAt);
          // An earlier attempt under another token, or one that gave up (or was granted by a message that overtook the reply).
          if (waiter.token !== token || waiter.done) {
            if (!(waiter.token === token && waiter.handed) && reply.status !== 'busy') this.leave(key, keys, token);
            return;
          }
          if (waiter.phase !== 'sending') return;
          if (reply.status === 'granted') return this.grant(waiter, reply.fence, reply.pttl, sentAt);
          if (reply.status !== 'queued') {
            this.leave(key, keys, token);
            return this.giveUp(
              waiter,
              new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key }),
              false,
            );
          }
          if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs)
            return this.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs));
          // Let through in case it would hold at once, and it did not: the layer's bound says whether it may wait.
          const refused = this.lines().waitsThere(waiter.caller);
          if (refused) {
            this.leave(key, keys, token);
            return this.giveUp(waiter, refused, false);
          }
          waiter.place();
          this.shareOf(waiter).waiters.add(waiter);
          this.wakeUps.ensure();
          this.schedule(this.shareOf(waiter), reply.pttl);
        },
        (error: unknown) => {
          if (waiter.token === token && !waiter.done) this.giveUp(waiter, error, false);
          if (this.parts.connection.mayHaveRun(error)) this.leave(key, keys, token);
        },
      );
  }

  /**
   * `grant`: the key is the waiter's beside the others, with `px` ms of lease from no
   * earlier than `since`. When that lease may have run out before the waiter could
   * run (or replicas must have it), Redis is asked first (`confirm`).
   */
  private grant(waiter: ShapedWaiter, fence: number, px: number, since: number, confirmed = false): void {
    // Handed the key in the same tick the caller gave up: it passes on, never runs.
    if (waiter.signal?.aborted) return this.giveUp(waiter, waiter.signal.reason, true);
    if (!confirmed && (!commands.isFresh(since, px) || this.parts.replicas)) return this.confirm(waiter, fence);
    this.unlist(waiter);
    waiter.grant(this.lockOf(waiter, fence, px, since));
  }

  private confirm(waiter: ShapedWaiter, fence: number): void {
    const { key, keys } = waiter;
    const token = waiter.token;
    this.unplace(waiter);
    waiter.confirm();
    commands.confirm(this.parts, key, keys, token, waiter.leaseMs, fence, true).then(
      (confirmed) => {
        if (waiter.phase !== 'confirming' || waiter.token !== token) return;
        if (typeof confirmed === 'number') return this.grant(waiter, fence, waiter.leaseMs, confirmed, true);
        this.waitAgain(waiter, confirmed === 'late');
      },
      (error: unknown) => {
        if (waiter.phase === 'confirming' && waiter.token === token) this.giveUp(waiter, error);
      },
    );
  }

  /** `requeue`: its grant ran out, or its place lapsed: it waits again at the tail under a new token, or times out. */
  private waitAgain(waiter: ShapedWaiter, mayHold: boolean): void {
    if (mayHold) this.leave(waiter.key, waiter.keys, waiter.token);
    if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs)
      return this.giveUp(waiter, new LockTimeoutError(waiter.key, waiter.waitTimeoutMs), false);
    this.unplace(waiter);
    this.byToken.delete(waiter.token);
    waiter.requeue(this.parts.tokens.next(waiter.leaseMs));
    this.byToken.set(waiter.token, waiter);
    this.send(waiter);
  }

  /** `give-up`: rejected now; a place (or a grant on its way) is given up behind the scenes (`leaves`: false when nothing to give up). */
  private giveUp(waiter: ShapedWaiter, error: unknown, leaves = waiter.phase !== 'sending'): void {
    if (waiter.done) return;
    this.unlist(waiter);
    waiter.giveUp(error, leaves);
    // A waiter still sending is undone when its reply arrives.
    if (leaves) this.leave(waiter.key, waiter.keys, waiter.token);
  }

  private lockOf(waiter: ShapedWaiter, fence: number, px: number, since: number): RedisLock {
    this.wakeUps.ensure();
    return new RedisLock(
      this.parts,
      this.lines(),
      waiter.key,
      waiter.keys,
      waiter.token,
      BigInt(fence),
      waiter.leaseMs,
      px,
      since,
      waiter.handoff,
      true,
    );
  }

  /** Gives up `token`'s place or holding behind the scenes (shaped-release.lua). Never throws. */
  private leave(key: string, keys: RedisLockKeys, token: string): void {
    commands
      .dated(this.parts, key, (client) => this.parts.scripts.shapedRelease.run(client, keys, token), URGENT)
      .then(
        ({ reply, sentAt }) => void (reply.handed && this.handedOn(reply.handed, sentAt)),
        // The place expires with its heart-beats, a holding with its lease.
        (error: unknown) => this.parts.logger.debug(`Could not leave the queue of lock "${key}": ${(error as Error)?.message ?? error}`),
      );
  }

  // ---- bookkeeping and heart-beats ------------------------------------------------------

  private shareOf(waiter: ShapedWaiter): ShapedKey {
    let share = this.keys.get(waiter.key);
    if (!share) {
      share = new ShapedKey(waiter.key, waiter.keys);
      this.keys.set(waiter.key, share);
    }
    return share;
  }

  /** The waiter no longer has a place this process heart-beats for. */
  private unplace(waiter: ShapedWaiter): void {
    const share = this.keys.get(waiter.key);
    if (!share?.waiters.delete(waiter) || share.waiters.size > 0) return;
    if (share.heartbeat) this.parts.deadlines.cancel(share.heartbeat);
    share.plan(undefined);
    this.keys.delete(waiter.key);
    if (this.idle) this.quiet();
  }

  /** The waiter is done waiting (granted or gave up): it leaves every list. */
  private unlist(waiter: ShapedWaiter): void {
    this.byToken.delete(waiter.token);
    this.byCaller.delete(waiter.caller);
    this.unplace(waiter);
    if (this.idle) this.quiet();
  }

  /** The key's next heart-beat: after a third of the heart-beat timeout, or when the holding's lease would end (`pttl`). */
  private schedule(share: ShapedKey, pttl: number): void {
    let delay = this.parts.heartbeatMs / 3;
    if (pttl === -2) delay = Math.min(delay, 5);
    else if (pttl >= 0 && pttl + 2 < delay) delay = pttl + 2;
    if (share.heartbeating) return;
    const planned = share.heartbeat;
    if (planned) {
      if (planned.at <= performance.now() + delay) return;
      this.parts.deadlines.cancel(planned);
    }
    share.plan(
      this.parts.deadlines.schedule(delay, () => {
        share.plan(undefined);
        this.heartbeat(share);
      }),
    );
  }

  private heartbeat(share: ShapedKey): void {
    if (share.waiters.size === 0 || share.heartbeating || this.keys.get(share.key) !== share) return;
    share.beat(true);
    const tokens = [...share.waiters].map((waiter) => waiter.token);
    commands
      .dated(this.parts, share.key, (client) => this.parts.scripts.shapedHeartbeat.run(client, share.keys, tokens), URGENT)
      .then(
        ({ reply, sentAt }) => this.onHeartbeat(share, reply, sentAt),
        (error: unknown) => {
          share.beat(false);
          // Redis could not be asked: its waiters cannot know their turn, so they fail closed.
          for (const waiter of [...share.waiters])
            this.giveUp(
              waiter,
              new LockBackendError(`Lost contact with Redis while waiting: ${(error as Error)?.message ?? error}`, {
                key: share.key,
                cause: error,
              }),
            );
        },
      );
  }

  private onHeartbeat(share: ShapedKey, reply: ShapedHeartbeatResult, sentAt: number): void {
    share.beat(false);
    if (reply.handed) this.handedOn(reply.handed, sentAt);
    for (const grant of reply.granted) {
      const waiter = this.byToken.get(grant.token);
      if (waiter?.phase === 'queued') this.grant(waiter, grant.fence, grant.px, sentAt);
    }
    for (const token of reply.missing) {
      const waiter = this.byToken.get(token);
      if (waiter?.phase === 'queued') this.waitAgain(waiter, false);
    }
    if (this.keys.get(share.key) === share && share.waiters.size > 0) this.schedule(share, reply.pttl);
  }
}
