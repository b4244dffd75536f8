import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import type { HandOffMode } from '../../acquire-options.interface';
import { LockBackendError, LockTimeoutError } from '../../errors/index';
import type { DeadlineQueue } from '../../internal/deadline.queue';
import type { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import type { LineCaller } from '../../local/line.caller';
import type { LockBackend } from '../../local/lock-backend.interface';
import type { LockLines } from '../../local/lock.lines';
import { RedisLock } from './holding/redis.lock';
import { TenureRegistry, type GrantBlock, type Serve } from './local-handoff/tenure.registry';
import { admit } from './local-handoff/redis.riders';
import * as commands from './protocol/redis.commands';
import { Floor } from './protocol/queue.floor';
import type { HandOff, PassOnResult } from './protocol/hand-off.reply';
import type { AcquireResult } from './protocol/acquire.script';
import type { HeartbeatResult } from './protocol/heartbeat.script';
import { messageOf } from './protocol/wake-up.messages';
import type { OwnerTokens } from './protocol/owner.tokens';
import type { RedisKeyspace, RedisLockKeys } from './protocol/redis.keyspace';
import type { RedisScripts } from './protocol/redis.scripts';
import { LONE_RELEASE, RELEASE, URGENT, type RedisCallOptions, type RedisConnection } from './transport/redis.connection';
import type { ReplicaAcks } from './transport/replica.acks';
import { RedisQueueShare, RedisWaiter } from './waiting/redis.waiter';
import { RedisWakeUps, type WakeUpListener } from './waiting/redis.wake-ups';
import { ShapedCallers } from './waiting/shaped.callers';

/** What the backend tells the provider's lines (the layer) of its own events, and asks of them. */
type RedisLines = Pick<LockLines<RedisLock>, 'released' | 'heldCount' | 'closing' | 'waitsThere'>;

/** What the backend works with (built once by the provider). */
export interface RedisBackendParts {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly keyspace: RedisKeyspace;
  readonly tokens: OwnerTokens;
  /** The provider's timers: heart-beats, renewals, and the layer's budgets. */
  readonly deadlines: DeadlineQueue;
  readonly stalls: EventLoopStallMonitor;
  readonly heartbeatMs: number;
  /** The lease of a caller that asked for none. */
  readonly leaseMs: number;
  readonly handoff: HandOffMode;
  /** Cohort mode's bound on local hand-offs in a row ahead of a known waiter of another process. */
  readonly maxLocalHandOffs: number;
  readonly logger: Logger;
  /** Set when a grant counts only once replicas have it (`replicas` option). */
  readonly replicas?: ReplicaAcks;
}

function noop(): void {}

/** What a withdrawn waiter's own promise settles with (the layer answered its caller already and reads nothing). */
const WITHDRAWN = new Error('withdrawn by the local layer');

/**
 * The Redis backend under the local layer (`LockLines`): every caller asks on
 * arrival (`asksOn: 'arrival'`), so each waiter takes its place in the Redis queue
 * at once and Redis keeps the global order of arrival. The layer admits callers,
 * runs their budgets and aborts, counts the holders and drains at shutdown; this
 * backend carries out every transition of a waiter's Redis state (the phases and
 * transitions of models/VOCABULARY.md, by `RedisWaiter`'s methods). Each Redis
 * event enters here once — an acquire, heart-beat, leave or confirmation reply, a
 * message on the wake-up channel, a held lock's release — and leaves with what it
 * decided carried out: the commands (protocol/redis.commands.ts) only send and return
 * the decoded reply, and the local hand-off (local-handoff/) only decides.
 *
 * How a hand-off reaches a waiter and when it may run on it: a script makes the
 * waiter the owner and says so by a reply (the release's, the acquisition's, a
 * leave's, a heart-beat's) or by a message on this process's channel. A reply's
 * grant counts from when its command was sent; a message's from when this
 * process's event loop was last known responsive. The waiter runs at once when
 * most of that lease is surely ahead (the usual case: one round trip plus the
 * notification); when it may have run out (a stall, late news), Redis is asked
 * first (`confirm`); if the key is no longer the waiter's, it never held it, and
 * it waits again at the tail within what is left of its budget (`requeue`), or
 * times out. So a late message or reply never makes this process a holder, and
 * fencing tokens stay strictly increasing in the order holders ran.
 */
export class RedisBackend implements LockBackend<RedisLock>, WakeUpListener {
  readonly asksOn = 'arrival';
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  readonly deadlines: DeadlineQueue;
  /**
   * Set when a grant counts only once replicas have it: every grant is then confirmed
   * (`confirm`, an owner-checked write with `WAIT` behind it) before its waiter runs,
   * except an acquisition's own, whose `WAIT` rode behind it; fewer acknowledgements:
   * the key is passed on and the waiter fails closed (`LockBackendError`).
   */
  readonly replicas: ReplicaAcks | undefined;
  readonly tenures: TenureRegistry<RedisWaiter>;
  private readonly wakeUps: RedisWakeUps;
  /** Callers holding a key beside others (`concurrency` > 1, `shared`): every grant made at Redis. */
  private readonly shaped: ShapedCallers;
  /** This process's waiters, per key (only while someone waits). */
  private readonly keys = new Map<string, RedisQueueShare>();
  /** This process's waiters, by owner token: where hand-offs find them. */
  private readonly byToken = new Map<string, RedisWaiter>();
  /** This process's waiters, by the layer's caller: where a withdrawal finds them. */
  private readonly byCaller = new Map<LineCaller<RedisLock>, RedisWaiter>();
  /** Leaves on their way (shutdown waits for them). */
  private readonly leaves = new Set<Promise<void>>();
  /** How often a waiter whose budget ran out while its script had no answer looks again. */
  private readonly recheckMs: number;
  /** A key's heart-beats: every third of the heart-beat timeout. */
  private readonly heartbeatEveryMs: number;

  constructor(
    private readonly parts: RedisBackendParts,
    /** The provider's lines (made after the backend): where its locks let go, and what it holds. */
    private readonly lines: () => RedisLines,
  ) {
    ({ connection: this.connection, scripts: this.scripts, deadlines: this.deadlines, replicas: this.replicas } = parts);
    this.tenures = new TenureRegistry(parts.handoff, parts.maxLocalHandOffs, parts, () => this.closing);
    this.wakeUps = new RedisWakeUps(parts.connection, parts.keyspace.channelPrefix + parts.tokens.session, this);
    this.recheckMs = Math.max(10, parts.connection.timeoutMs / 8);
    this.heartbeatEveryMs = parts.heartbeatMs / 3;
    this.shaped = new ShapedCallers(
      parts,
      lines,
      this.wakeUps,
      (handOff, since) => this.onHandOff(handOff, since),
      () => {
        if (this.keys.size === 0) this.parts.stalls.stop();
      },
    );
  }

  /** LockBackend: one key may have several holders (`concurrency` > 1, `shared`), each granted at Redis. */
  get holdsTogether(): boolean {
    return true;
  }

  /** Keys this process waits for right now. */
  get size(): number {
    return this.keys.size;
  }

  /** Shutdown began (the layer's): nothing is handed on in-process, and nobody rides. */
  private get closing(): boolean {
    return this.lines().closing;
  }

  // ---- a new caller: send, or ride -------------------------------------------------

  /** LockBackend: a try arrived: it takes the key if it is free and nobody waits (one round trip). */
  take(caller: LineCaller<RedisLock>): Promise<RedisLock | null> {
    if (caller.limit !== 1 || caller.shared) return this.shaped.take(caller);
    return this.tryTake(caller.key, caller.leaseMs ?? this.parts.leaseMs, caller.signal, caller.handoff);
  }

  /**
   * LockBackend: a waiter arrived. Its acquisition (mode "wait") is sent now, or it
   * rides; its caller is told when it holds the key or may not.
   */
  askOnArrival(caller: LineCaller<RedisLock>): void {
    if (caller.limit !== 1 || caller.shared) return this.shaped.askOnArrival(caller);
    const leaseMs = caller.leaseMs ?? this.parts.leaseMs;
    const key = caller.key;
    let queue = this.keys.get(key);
    if (!queue) {
      queue = new RedisQueueShare(key, this.parts.keyspace.keysOf(key));
      this.keys.set(key, queue);
    }
    const waiter = new RedisWaiter(queue, this.parts.tokens.next(leaseMs), leaseMs, caller);
    this.byToken.set(waiter.token, waiter);
    this.byCaller.set(caller, waiter);
    this.admit(waiter);
  }

  /** LockBackend: the caller left (timeout, abort, shutdown): its place in Redis, if any, is given up. */
  withdraw(caller: LineCaller<RedisLock>): void {
    const waiter = this.byCaller.get(caller);
    if (waiter) this.giveUp(waiter, WITHDRAWN);
    else this.shaped.withdraw(caller, WITHDRAWN);
  }

  /**
   * LockBackend: the caller's budget ran out. Queued (or confirming a hand-off, or
   * riding): it times out. Its script unanswered while others were answered since:
   * Redis is merely busy, a timeout like any other (the reply undoes what the script
   * took). Nothing answered since: Redis may be gone, which the backend bound says
   * (`LockBackendError`, never a 429 for an outage), so it looks again shortly.
   */
  overdue(caller: LineCaller<RedisLock>): number | undefined {
    const waiter = this.byCaller.get(caller);
    if (!waiter) return this.shaped.overdue(caller);
    if (waiter.phase !== 'sending' || this.connection.answeredSince(caller.key, caller.startedAt)) return undefined;
    return this.recheckMs;
  }

  /** LockBackend: the error of a caller whose budget ran out. */
  timeoutError(key: string, waitTimeoutMs: number): Error {
    return new LockTimeoutError(key, waitTimeoutMs);
  }

  /** `send` or `ride` (see local-handoff/redis.riders.ts). */
  private admit(waiter: RedisWaiter): void {
    const queue = waiter.queue;
    // A shaped waiter of this process queued for the key: nobody rides past it.
    const may = !this.closing && this.wakeUps.listening && this.tenures.on && !this.shaped.waits(queue.key);
    const admission = admit(queue, may, () => this.tenures.mayRide(queue.key));
    if (admission.kind === 'follow') return waiter.follow(admission.leader);
    if (admission.kind === 'send') return this.send(waiter);
    // A rider gets no reply to be refused at: the layer's bound is asked before it rides.
    const refused = this.lines().waitsThere(waiter.caller);
    if (refused) this.giveUp(waiter, refused, false);
    else waiter.ride(admission.anchor);
  }

  /** Sends the waiter's acquisition (mode "wait") under its current owner token. */
  private send(waiter: RedisWaiter): void {
    const { key, keys } = waiter.queue;
    const token = waiter.token;
    waiter.lead();
    // From now on a hand-off message may come for it, and has to be dated.
    this.parts.stalls.start();
    // Given up while still queued in this process: never sent, nothing to undo (`waiter.skip()`).
    commands.acquire(this, key, keys, token, waiter.leaseMs, 'wait', waiter).then(
      (sent) => this.onAcquireReply(waiter, token, sent.reply, sent.sentAt, sent.synced),
      (error: unknown) => this.onAcquireFailed(waiter, token, error),
    );
  }

  private onAcquireReply(waiter: RedisWaiter, token: string, result: AcquireResult, sentAt: number, synced?: boolean): void {
    if (result.handed) this.onHandOff(result.handed, sentAt);
    if (result.status === 'queued') {
      this.tenures.learned(waiter.queue.key, result.floor);
      waiter.queue.heardOf(result.floor);
    }
    this.placeOrUndo(waiter, token, result, sentAt, synced);
    this.lead(waiter);
  }

  private placeOrUndo(waiter: RedisWaiter, token: string, result: AcquireResult, sentAt: number, synced?: boolean): void {
    const { key, keys } = waiter.queue;
    const { status } = result;
    // An earlier attempt of a waiter that now waits under a new token: undo it.
    if (waiter.token !== token) {
      if (status !== 'busy') this.leave(key, keys, token);
      return;
    }
    if (waiter.done) {
      // Handed the key by a message that overtook this reply (nothing to do), or it
      // gave up meanwhile (shutdown): undo what the call took.
      if (!waiter.handed && status !== 'busy') this.leave(key, keys, token);
      return;
    }
    // Handed the key by a message that overtook this reply; Redis is being asked whether it still holds.
    if (waiter.phase === 'confirming') return;
    if (status === 'granted') {
      // Replicas did not confirm the grant in time: it does not count (fail closed; the leave passes the key on).
      if (this.replicas && !synced) return this.giveUp(waiter, this.replicas.unacked(key, 'A grant'), true);
      return this.grant(waiter, result.fence, result.pttl, sentAt, { last: result.last, floor: Floor.NONE }, true);
    }
    if (status !== 'queued') {
      return this.giveUp(
        waiter,
        new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key }),
        true,
      );
    }
    // Its budget ran out while the reply was on its way (see `overdue`).
    if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      return this.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs), true);
    }
    // It was let through in case it became the holder, and it did not: the layer's bound says whether it may wait.
    const refused = this.lines().waitsThere(waiter.caller);
    if (refused) return this.giveUp(waiter, refused, true);
    // Its deadline and abort listener run since the call; it now has a place.
    // A waiter of another process heard of behind this place while its reply was on the way closes it to riders.
    waiter.place(result.fence, this.tenures.floorOf(key));
    this.wakeUps.ensure();
    this.scheduleHeartbeat(waiter.queue, result.pttl);
  }

  private onAcquireFailed(waiter: RedisWaiter, token: string, error: unknown): void {
    const { key, keys } = waiter.queue;
    if (waiter.token === token) {
      // Handed the key by a message that overtook this failure: it holds it.
      if (waiter.handed) return this.lead(waiter);
      if (!waiter.done) this.giveUp(waiter, error, false);
    }
    // It may have run: undo whatever it took.
    if (this.connection.mayHaveRun(error)) this.leave(key, keys, token);
    this.lead(waiter);
  }

  /** The reply to `leader`'s acquisition came (or it failed): its followers ride behind it if they may now, or are sent. */
  private lead(leader: RedisWaiter): void {
    for (const waiter of leader.takeFollowers()) {
      waiter.unfollow();
      this.admit(waiter);
    }
  }

  // ---- hand-offs -------------------------------------------------------------------

  /** WakeUpListener: a message on this process's channel (a hand-off, or a notice). */
  onMessage(text: string): void {
    const message = messageOf(text);
    if (message?.kind === 'hand-off') this.onHandOff(message.handOff, this.parts.stalls.respondedAt());
    else if (message?.kind === 'notice') this.onNotice(message.owner, message.place);
  }

  /**
   * A script passed the key to `handOff.member`, with `px` ms of lease from no
   * earlier than `since`: if it is a waiter of this process, it now holds the key.
   */
  private onHandOff(handOff: HandOff, since: number): void {
    // A waiter already served in-process has nothing waiting for it (our own lease ran out meanwhile): pass the key on.
    const served = this.tenures.servedOf(handOff.member);
    if (served) return this.leave(served.key, served.keys, handOff.member);
    if (this.shaped.granted(handOff, since)) return;
    const waiter = this.byToken.get(handOff.member);
    // Anyone else: a waiter of another process (told by message), one of ours that
    // gave up (its leave, sent later, passes the key on), or one whose hand-off is
    // being confirmed (Redis decides).
    if (waiter === undefined || waiter.done || waiter.phase === 'confirming') return;
    this.grant(waiter, handOff.fence, handOff.px, since, handOff);
  }

  /** A waiter of another process queued at `place` behind `owner`, a holder or waiter of this process. */
  private onNotice(owner: string, place: number): void {
    const tenureKey = this.tenures.noticed(owner, place);
    // Handed the key but its news has not come yet (a reply on the other connection, or being
    // confirmed), or the waiter the other process's waiter queued behind.
    const waiter = tenureKey === undefined ? this.byToken.get(owner) : undefined;
    if (waiter) waiter.noticed(place);
    const key = tenureKey ?? waiter?.queue.key;
    const queue = key === undefined ? undefined : this.keys.get(key);
    // At the tail of the queue: behind every place of this process before it, so no rider may join the last of them.
    const anchor = queue?.lastPlace;
    if (anchor && anchor.fence < place) anchor.noticed(place);
    // Behind a place whose acquire reply is still on its way, too: that place is closed when it comes (`place`).
    queue?.heardOf(place);
  }

  /**
   * `grant`: the key is the waiter's, with `px` ms of lease from no earlier than
   * `since`: it resolves with the lock, or passes the key on if it was just
   * aborted. When the lease may have run out before the waiter could run, `confirm`.
   */
  private grant(waiter: RedisWaiter, fence: number, px: number, since: number, block?: GrantBlock, synced = false): void {
    const { key, keys } = waiter.queue;
    if (waiter.signal?.aborted) {
      // Handed over in the same tick the caller gave up (its abort not yet heard by the layer): pass it on, never run.
      this.finish(waiter, false, true);
      this.leave(key, keys, waiter.token);
      waiter.caller.refused(waiter.signal.reason);
      return;
    }
    if (!commands.isFresh(since, px)) return this.confirm(waiter, fence);
    // Replicas must have it first: Redis is asked, and `WAIT` rides behind the question.
    if (this.replicas && !synced) return this.confirm(waiter, fence, block);
    // Granted before finished: the riders behind its place stay, to be served by its tenure.
    this.finish(waiter, true);
    const lock = this.lockFor(key, keys, waiter.token, fence, waiter.leaseMs, px, since, block, waiter.handoff);
    this.tenures.learned(key, waiter.notice);
    waiter.caller.granted(lock);
  }

  /**
   * `confirm`: Redis is asked whether the key is still the waiter's (grant
   * re-confirmation), and with replica acknowledgements on, whether they have it.
   * `block`: the grant was fresh (only the replicas were in doubt), so its block of
   * tokens still serves local hand-offs.
   */
  private confirm(waiter: RedisWaiter, fence: number, block?: GrantBlock): void {
    const { key, keys } = waiter.queue;
    const token = waiter.token;
    if (waiter.phase === 'queued') this.sendAll(this.detach(waiter));
    waiter.confirm(fence);
    commands.confirm(this, key, keys, token, waiter.leaseMs, fence).then(
      (confirmed) => {
        // Gave up meanwhile: its leave, sent after this question, passed the key on.
        if (waiter.phase !== 'confirming' || waiter.token !== token) return;
        if (typeof confirmed === 'number') this.grant(waiter, fence, waiter.leaseMs, confirmed, block, true);
        else this.waitAgain(waiter, confirmed === 'late');
      },
      (error: unknown) => {
        // It may still hold the key (or replicas did not confirm it): pass it on (its lease ends it if Redis stays away).
        if (waiter.phase === 'confirming' && waiter.token === token) this.giveUp(waiter, error, true);
      },
    );
  }

  /**
   * `requeue`: the waiter has nothing in Redis any more: its hand-off ran out before
   * it could run, or its place was dropped because this process did not heart-beat
   * in time (its own stall, which is no backend failure). It takes a new place at
   * the tail, under a new token, or times out once its budget is spent.
   * `mayHoldKey`: the key may still be its own, so it is passed on first.
   */
  private waitAgain(waiter: RedisWaiter, mayHoldKey: boolean): void {
    const { key, keys } = waiter.queue;
    if (mayHoldKey) this.leave(key, keys, waiter.token);
    if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      this.finish(waiter, false);
      waiter.caller.refused(new LockTimeoutError(key, waiter.waitTimeoutMs));
      return;
    }
    if (waiter.phase === 'queued') this.sendAll(this.detach(waiter));
    this.byToken.delete(waiter.token);
    waiter.requeue(this.parts.tokens.next(waiter.leaseMs));
    this.byToken.set(waiter.token, waiter);
    this.send(waiter);
  }

  /**
   * Unlinks `waiter`, which has a place and leaves it without the key (it gives up,
   * lost its place, or its hand-off is in doubt): the riders that rode on its place
   * are returned (`requeue`d), to be sent. A waiter of another process that queued
   * behind its place told it, not the place before it: that one takes no more
   * riders (as if told that someone queued right behind it).
   */
  private detach(waiter: RedisWaiter): RedisWaiter[] {
    const queue = waiter.queue;
    const before = waiter.prev && (waiter.prev.rider ? waiter.prev.anchor : waiter.prev);
    if (before && before.phase === 'queued') before.noticed(waiter.fence);
    const orphans = queue.takeRun(waiter);
    queue.unlink(waiter);
    return orphans;
  }

  /** The riders at the front of `key`'s waiters take places of their own: the tenure they rode on ended. */
  private unride(key: string): void {
    const queue = this.keys.get(key);
    if (queue) this.sendAll(queue.takeRun());
  }

  /** Riders whose place or tenure is gone (`requeue`d) are sent for places of their own, in arrival order. */
  private sendAll(waiters: readonly RedisWaiter[]): void {
    for (const waiter of waiters) this.send(waiter);
  }

  /**
   * `grant` (`granted`) or `give-up` (`handed`: the key came as it gave up): the
   * waiter is done waiting (it then resolves or rejects), and leaves the lists.
   */
  private finish(waiter: RedisWaiter, granted: boolean, handed = false): void {
    if (waiter.done) return;
    const queue = waiter.queue;
    let orphans: RedisWaiter[] | undefined;
    if (waiter.phase === 'queued') {
      // Leaving its place without the key: the riders behind it lose what they rode on.
      if (granted) queue.unlink(waiter);
      else orphans = this.detach(waiter);
    } else if (waiter.phase === 'riding') queue.unlink(waiter);
    else waiter.unfollow();
    if (granted) waiter.grant();
    else waiter.giveUp(handed);
    this.byToken.delete(waiter.token);
    this.byCaller.delete(waiter.caller);
    if (orphans?.length) this.sendAll(orphans);
    this.closeKeyIfIdle(queue);
  }

  /** `give-up`: the waiter is rejected at once; its place in Redis, if any, is given up behind the scenes. */
  private giveUp(waiter: RedisWaiter, error: unknown, hasPlace = waiter.phase === 'queued' || waiter.phase === 'confirming'): void {
    if (waiter.done) return;
    this.finish(waiter, false);
    waiter.caller.refused(error);
    // A waiter still sending is undone when its reply arrives.
    if (hasPlace) this.leave(waiter.queue.key, waiter.queue.keys, waiter.token);
  }

  // ---- heart-beats -----------------------------------------------------------------

  /**
   * Plans the key's next heart-beat (one per key and process for all of its
   * waiters): after a third of the heart-beat timeout, or when the holder's lease
   * would end (`holderPttl`; -2: no holder, now), whichever comes first. It keeps
   * their places alive, passes on a key whose holder's lease ran out, and finds
   * what a missed hand-off message said. No waiter polls.
   */
  private scheduleHeartbeat(queue: RedisQueueShare, holderPttl: number): void {
    if (queue.places === 0) return;
    let delay = this.heartbeatEveryMs;
    if (holderPttl === -2)
      delay = 0; // no holder: someone must pass the key on
    else if (holderPttl >= 0 && holderPttl + 2 < delay) delay = holderPttl + 2;
    const at = performance.now() + delay;
    if (queue.heartbeating) return queue.beatAgainBy(at);
    const planned = queue.heartbeat;
    if (planned) {
      if (planned.at <= at) return;
      this.deadlines.cancel(planned);
    }
    queue.planBeat(
      this.deadlines.schedule(delay, () => {
        queue.planBeat(undefined);
        this.heartbeat(queue);
      }),
    );
  }

  private heartbeat(queue: RedisQueueShare): void {
    if (queue.places === 0 || queue.heartbeating || this.keys.get(queue.key) !== queue) return;
    queue.beatSent();
    commands.heartbeat(this, queue.key, queue.keys, queue.tokens()).then(
      (sent) => this.onHeartbeatReply(queue, sent.reply, sent.sentAt),
      (error: unknown) => this.onHeartbeatFailed(queue, error),
    );
  }

  private onHeartbeatReply(queue: RedisQueueShare, result: HeartbeatResult, sentAt: number): void {
    // Asked for while this one was on its way (no later than then).
    const againAt = queue.beatAnswered();
    // What the reply says held when the script ran, no earlier than when it was sent.
    if (result.handed) this.onHandOff(result.handed, sentAt);
    const ours = result.owner ? this.byToken.get(result.owner) : undefined;
    // Handed the key by a message this process missed.
    // Its fencing tokens are the block the hand-off reserved (the message's, had it come first).
    if (ours && ours.phase === 'queued' && result.ownerBlock.fence > 0) {
      this.grant(ours, result.ownerBlock.fence, result.pttl, sentAt, result.ownerBlock);
    }
    // Neither queued nor holding: passed over after missing its heart-beats (this
    // process stalled), or handed a key whose lease ran out before it could run.
    for (const token of result.missing) {
      const lost = token === result.owner ? undefined : this.byToken.get(token);
      if (lost && lost.phase === 'queued') this.waitAgain(lost, false);
    }
    if (queue.places === 0) return this.closeKeyIfIdle(queue);
    const again = againAt - performance.now();
    this.scheduleHeartbeat(
      queue,
      Math.min(result.pttl === -2 ? -2 : result.pttl, Number.isFinite(again) ? Math.max(0, again - 2) : Infinity),
    );
  }

  /** Redis could not be asked: its waiters cannot know their turn, so they fail closed. */
  private onHeartbeatFailed(queue: RedisQueueShare, error: unknown): void {
    queue.beatAnswered();
    // Riders too: their tenure cannot renew without Redis either. From the last: a rider
    // goes before the place it rides on would send it to Redis for a place of its own.
    for (let waiter = queue.last; waiter; waiter = queue.last) {
      // Its place expires with its heart-beats if Redis stays away.
      this.giveUp(
        waiter,
        new LockBackendError(`Lost contact with Redis while waiting: ${(error as Error)?.message ?? error}`, {
          key: queue.key,
          cause: error,
        }),
      );
    }
    this.closeKeyIfIdle(queue);
  }

  private closeKeyIfIdle(queue: RedisQueueShare): void {
    if (!queue.empty || queue.heartbeating) return;
    if (queue.heartbeat) this.deadlines.cancel(queue.heartbeat);
    queue.planBeat(undefined);
    if (this.keys.get(queue.key) === queue) this.keys.delete(queue.key);
    if (this.keys.size === 0 && this.shaped.idle) this.parts.stalls.stop();
  }

  /** WakeUpListener: after a reconnect or (re)subscription messages may have been lost, so every waiting key heart-beats now. */
  resync(): void {
    for (const queue of this.keys.values()) this.scheduleHeartbeat(queue, -2);
    this.shaped.resync();
  }

  // ---- leaves ----------------------------------------------------------------------

  /** Gives up `token`'s place, or passes the key on if `token` holds it, behind the scenes. Never throws. */
  leave(key: string, keys: RedisLockKeys, token: string): void {
    const call = commands
      .leave(this, key, keys, token)
      .then(
        (sent) => void (sent.reply.handed && this.onHandOff(sent.reply.handed, sent.sentAt)),
        // The place expires with its heart-beats, a grant with its lease.
        (error: unknown) => this.parts.logger.debug(`Could not leave the queue of lock "${key}": ${(error as Error)?.message ?? error}`),
      )
      .finally(() => this.leaves.delete(call));
    this.leaves.add(call);
  }

  /** Resolves once every leave sent so far has its answer. */
  async leavesSettled(): Promise<void> {
    await Promise.allSettled([...this.leaves]);
  }

  // ---- tries (mode "try") ----------------------------------------------------------

  /**
   * Takes the key if it is free and nobody waits, in one round trip, `null`
   * otherwise (the layer's `tryAcquire`, `waitTimeoutMs: 0` and `maxPending: 0`;
   * it waited for this process's own release in flight first).
   */
  private tryTake(
    key: string,
    leaseMs: number,
    signal: AbortSignal | undefined,
    handoff: HandOffMode | undefined,
  ): Promise<RedisLock | null> {
    const keys = this.parts.keyspace.keysOf(key);
    const token = this.parts.tokens.next(leaseMs);
    return commands.acquire(this, key, keys, token, leaseMs, 'try').then(
      ({ reply: result, sentAt, synced }) => {
        if (result.handed) this.onHandOff(result.handed, sentAt);
        if (result.status === 'granted' && this.replicas && !synced) {
          // Replicas did not confirm the grant in time: it does not count (fail closed).
          this.leave(key, keys, token);
          throw this.replicas.unacked(key, 'A grant');
        }
        if (result.status === 'granted')
          return this.taken(key, keys, token, result.fence, leaseMs, result.pttl, sentAt, signal, result.last, handoff);
        if (result.status === 'twice') {
          this.leave(key, keys, token);
          throw new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key });
        }
        return null;
      },
      (error: unknown) => {
        // It may have run: undo whatever it took.
        if (this.connection.mayHaveRun(error)) this.leave(key, keys, token);
        throw error;
      },
    );
  }

  /**
   * LockBackend: a key set at once (every key free in this process; canonical
   * order): one script takes every key when each is free and nobody waits for it
   * at Redis, or none (acquire-set.lua). On a standalone server any keys; in a
   * Cluster only keys of one slot — otherwise `null`, unsent, and the set goes key
   * by key. A grant that cannot count (replicas did not confirm it; the reply came
   * too late for its lease) is given back: an error, or `null` for a late one.
   */
  takeSet(callers: readonly LineCaller<RedisLock>[]): Promise<RedisLock[] | null> {
    const { keyspace } = this.parts;
    const keys = callers.map((caller) => caller.key);
    if (this.connection.isCluster && keys.some((key) => keyspace.slotOf(key) !== keyspace.slotOf(keys[0]))) return Promise.resolve(null);
    const leaseMs = callers[0].leaseMs ?? this.parts.leaseMs;
    const lockKeys = keys.map((key) => keyspace.keysOf(key));
    const tokens = keys.map(() => this.parts.tokens.next(leaseMs));
    const undo = (): void => keys.forEach((key, i) => this.leave(key, lockKeys[i], tokens[i]));
    return commands.acquireSet(this, keys, lockKeys, tokens, leaseMs).then(
      ({ reply, sentAt, synced }) => {
        if (reply.status === 'busy') return null;
        if (reply.status === 'twice') {
          undo();
          throw new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key: keys[0] });
        }
        if (this.replicas && !synced) {
          // Replicas did not confirm the grant in time: it does not count (fail closed).
          undo();
          throw this.replicas.unacked(keys[0], 'A grant');
        }
        if (!commands.isFresh(sentAt, leaseMs)) {
          // The reply came too late to count (a stalled event loop): given back, and the set goes key by key.
          undo();
          return null;
        }
        const signal = callers[0].signal;
        if (signal?.aborted) {
          undo();
          throw signal.reason;
        }
        return keys.map((key, i) =>
          this.lockFor(
            key,
            lockKeys[i],
            tokens[i],
            reply.fences[i],
            leaseMs,
            leaseMs,
            sentAt,
            { last: reply.lasts[i], floor: Floor.NONE },
            callers[i].handoff,
          ),
        );
      },
      (error: unknown) => {
        // It may have run: undo whatever it took.
        if (this.connection.mayHaveRun(error)) undo();
        throw error;
      },
    );
  }

  /** The key was taken by a try: the caller holds it once it is sure the lease still runs. */
  private async taken(
    key: string,
    keys: RedisLockKeys,
    token: string,
    fence: number,
    leaseMs: number,
    px: number,
    since: number,
    signal: AbortSignal | undefined,
    last: number,
    handoff: HandOffMode | undefined,
  ): Promise<RedisLock | null> {
    if (!commands.isFresh(since, px)) {
      // The reply came too late to count (a stalled event loop): Redis decides.
      const confirmed = await commands.confirm(this, key, keys, token, leaseMs, fence).catch((error: unknown) => {
        this.leave(key, keys, token);
        throw error;
      });
      if (typeof confirmed !== 'number') {
        if (confirmed === 'late') this.leave(key, keys, token);
        return null;
      }
      [px, since] = [leaseMs, confirmed];
    }
    if (signal?.aborted) {
      this.leave(key, keys, token);
      throw signal.reason;
    }
    return this.lockFor(key, keys, token, fence, leaseMs, px, since, { last, floor: Floor.NONE }, handoff);
  }

  // ---- held locks and local hand-offs ----------------------------------------------

  /** A lock got from Redis under `token`, with `px` ms of lease from `since`: a new tenure begins (`block`). */
  private lockFor(
    key: string,
    keys: RedisLockKeys,
    token: string,
    fence: number,
    leaseMs: number,
    px: number,
    since: number,
    block: GrantBlock | undefined,
    handoff: HandOffMode | undefined,
  ): RedisLock {
    const change = this.tenures.begin(key, keys, token, fence, block);
    if (block) this.keys.get(key)?.heardOf(block.floor);
    for (const served of change.leave?.tokens ?? []) this.leave(key, change.leave!.keys, served);
    if (change.unride) this.unride(key);
    const lock = new RedisLock(this, this.lines(), key, keys, token, BigInt(fence), leaseMs, px, since, handoff);
    // A holder hears of other processes' waiters on the wake-up channel: whether its release hands the key to anyone.
    this.wakeUps.ensure();
    return lock;
  }

  /** A local hand-off decided by the tenures: the waiter holds the key in-process (`grant`). */
  private serve(key: string, serve: Serve<RedisWaiter>): void {
    const { waiter } = serve;
    const lock = new RedisLock(
      this,
      this.lines(),
      key,
      serve.keys,
      serve.token,
      serve.fence,
      waiter.leaseMs,
      serve.px,
      serve.since,
      waiter.handoff,
    );
    const queue = waiter.queue;
    this.finish(waiter, true);
    waiter.caller.granted(lock);
    this.tenures.afterServe(key, serve.fence, waiter.leaseMs, queue.riders, (limit) => queue.frontRiders(limit));
  }

  /**
   * LockBackend: the holder lets go (the layer still counts it until this settles).
   * With a lease this process is sure of, the key passes to its next waiter
   * in-process when the tenure registry allows (nothing sent); riders waiting with the block
   * spent keep the key with a fresh block; otherwise the release script hands it to
   * the first live waiter in Redis. Resolves with the reply; rejects when Redis
   * could not be told (the lease ends it, and the queue moves on then).
   */
  release(lock: RedisLock): Promise<undefined> | undefined {
    if (lock.shaped) return this.shaped.release(lock);
    // Not in-process past a shaped waiter of this process (each shaped grant is made at Redis, in queue order).
    const passable = lock.passable && !this.shaped.waits(lock.key);
    if (passable && this.passOn(lock)) return undefined;
    // Riders wait and the block is spent: keep the key with a fresh block for them.
    const keep = passable ? this.keepFor(lock) : 0;
    // Asked before releaseSent, which ends the tenure that knows of other processes' waiters.
    const options = keep === 0 ? this.releaseOptions(lock) : URGENT;
    const served = this.releaseSent(lock, keep);
    let sentAt = -Infinity;
    return this.connection
      .run(
        lock.key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.release.run(client, lock.keys, lock.token, served, keep);
        },
        options,
      )
      .then(
        (result) => {
          // Not ours any more: the lease ran out while the holder ran, and nobody had told it.
          const lost = result.status === 'none' ? lock.lostAtRelease() : undefined;
          if (lost) this.parts.logger.warn(lost.message);
          this.releaseAnswered(lock, result, sentAt, served, keep);
          return undefined;
        },
        (error: unknown) => {
          this.releaseAnswered(lock, undefined, sentAt, served, keep);
          throw error;
        },
      );
  }

  /** Passes the released lock (lease still fresh) to this process's next waiter, in-process; false: release it to Redis. */
  private passOn(lock: RedisLock): boolean {
    const serve = this.tenures.passOn(lock, this.keys.get(lock.key)?.first);
    if (!serve) return false;
    this.serve(lock.key, serve);
    return true;
  }

  /**
   * How the release is written. It may share its write with what this process sends
   * next when no waiter of this process waits for the key and none of another was
   * heard of by its tenure (while listening), so it hands the key to no one: until the
   * end of the event-loop iteration while another lock is held here (a busy server:
   * the layer still counts this one until its release is answered, and the commands
   * of other requests read in the same iteration follow), otherwise until the end of
   * the current turn (a caller running sections one after another: its next
   * acquisition follows in the same turn). Anyone known to wait: written at once.
   * Sharing halves the system calls of a sequential caller (bench row `1.redis.cpu`;
   * docs/BENCHMARKS.md, "Scenario 1: one write per section").
   */
  private releaseOptions(lock: RedisLock): RedisCallOptions {
    const nobodyWaits =
      this.wakeUps.listening && this.keys.get(lock.key)?.first === undefined && this.tenures.floorOf(lock.key) === Floor.NONE;
    if (!nobodyWaits) return URGENT;
    return this.lines().heldCount > 1 ? RELEASE : LONE_RELEASE;
  }

  /** Lease (ms) to keep the key for this process's riders if nobody is queued in Redis (0: release as usual). */
  private keepFor(lock: RedisLock): number {
    const queue = this.keys.get(lock.key);
    return this.tenures.keepFor(lock, queue?.first, queue?.first ? queue.riders : 0);
  }

  /** The release is on its way (`keep` > 0: keeping the key): the served waiters' places it removes. */
  private releaseSent(lock: RedisLock, keep: number): readonly string[] {
    if (keep > 0) return this.tenures.keeping(lock);
    const { served, unride } = this.tenures.end(lock);
    if (unride) this.unride(lock.key);
    return served;
  }

  /** The release's reply (sent at `sentAt`, with `served` and `keep`), or its failure (`result` undefined). */
  private releaseAnswered(
    lock: RedisLock,
    result: PassOnResult | undefined,
    sentAt: number,
    served: readonly string[],
    keep: number,
  ): void {
    this.tenures.forget(served);
    if (result?.kept) {
      this.keys.get(lock.key)?.heardOf(result.kept.floor);
      const serve = this.tenures.kept(lock, result.kept, sentAt, this.keys.get(lock.key)?.first);
      if (serve) this.serve(lock.key, serve);
      else {
        // Nobody left to serve here (they gave up on the way, or the next has to wait behind another process): back to Redis.
        const { fence, px } = result.kept;
        new RedisLock(
          this,
          this.lines(),
          lock.key,
          this.parts.keyspace.keysOf(lock.key),
          lock.token,
          BigInt(fence),
          px,
          px,
          sentAt,
          undefined,
        )
          .release()
          .catch(noop);
      }
    } else if (keep > 0 && this.tenures.ended(lock)) this.unride(lock.key);
    if (result?.handed) this.onHandOff(result.handed, sentAt);
  }

  // ---- shutdown ----------------------------------------------------------------

  /** Closes the wake-up connection (after the leaves on their way have their answers). */
  async close(): Promise<void> {
    await this.wakeUps.close();
  }
}
