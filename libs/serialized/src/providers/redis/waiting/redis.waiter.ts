import type { HandOffMode } from '../../../acquire-options.interface';
import type { Deadline } from '../../../internal/deadline.queue';
import type { LineCaller } from '../../../local/line.caller';
import type { RedisLock } from '../holding/redis.lock';
import { Floor } from '../protocol/queue.floor';
import type { RedisLockKeys } from '../protocol/redis.keyspace';
import type { RedisCallOptions } from '../transport/redis.call';

/**
 * A waiter's phases, named as models/VOCABULARY.md and models/redis.pml name them
 * (test/models/vocabulary.spec.ts compares the sets). A phase, a grant, a fence
 * and rider membership change only through the transitions below (this file is
 * their one writer; scripts/check-structure.js fails on an assignment elsewhere).
 */
export const WAITER_PHASES = ['sending', 'queued', 'riding', 'confirming', 'granted', 'gave-up'] as const;

export type WaiterPhase = (typeof WAITER_PHASES)[number];

/**
 * One caller of the local layer waiting for a key in Redis: its Redis state (its
 * caller's budget, signal and bound are the layer's, read from `caller`). It is
 * also the options of its acquire call: a call whose waiter gave up before it was
 * sent is dropped unsent.
 */
export class RedisWaiter implements RedisCallOptions {
  phase: WaiterPhase = 'sending';
  /** Its place in the Redis queue, which becomes its fencing token (0: none yet). */
  fence = 0;
  /** A rider's waiter with a place it rides behind (undefined: it rides on this process's tenure). */
  anchor: RedisWaiter | undefined = undefined;
  /** The waiter on its way to a place whose reply this one waits for (it then rides behind it, or queues). */
  following: RedisWaiter | undefined = undefined;
  /** Newcomers waiting for this one's reply, in arrival order. */
  followers: RedisWaiter[] | undefined = undefined;
  /**
   * Place of a waiter of another process queued behind it: told as the tail of the
   * queue (no rider may join its place from then on), or as the holder before this
   * process knew it held the key.
   */
  notice: number = Floor.NONE;
  /** The key was handed to it: it holds it (granted), or gave up as it came and its leave passed it on. */
  handed = false;
  prev: RedisWaiter | undefined;
  next: RedisWaiter | undefined;

  constructor(
    readonly queue: RedisQueueShare,
    /** Its owner token; a waiter that lost an expired hand-off waits again under a new one. */
    public token: string,
    readonly leaseMs: number,
    /** The layer's caller it waits for. */
    readonly caller: LineCaller<RedisLock>,
  ) {
    queue.asking++;
  }

  get waitTimeoutMs(): number {
    return this.caller.waitTimeoutMs;
  }

  get signal(): AbortSignal | undefined {
    return this.caller.signal;
  }

  /** How this caller, once holding, passes the key on (undefined: the provider's mode). */
  get handoff(): HandOffMode | undefined {
    return this.caller.handoff;
  }

  /** When its wait budget started (the layer's stamp). */
  get startedAt(): number {
    return this.caller.startedAt;
  }

  /** Its acquisition or a confirmation is on its way to Redis: it is neither in the key's list nor following. */
  private get asking(): boolean {
    return (this.phase === 'sending' && this.following === undefined) || this.phase === 'confirming';
  }

  /** It has no place in Redis: it waits for a local hand-off. */
  get rider(): boolean {
    return this.phase === 'riding';
  }

  /** Granted or gave up: nothing more happens to it. */
  get done(): boolean {
    return this.phase === 'granted' || this.phase === 'gave-up';
  }

  /** Asked by the connection just before the acquire call is sent. */
  skip(): boolean {
    return this.done;
  }

  /**
   * `place`: the acquire reply queued it at `fence`. A waiter of another process
   * this process heard of at a later place (`queue.heardBehind`, or `floor`, the
   * tenure's) queued behind this place while its reply was on the way; the notice
   * naming it found no place to close then (this one was not linked yet), so it
   * closes this one now: no rider may join it (models/redis.pml's `hmax`).
   */
  place(fence: number, floor: number = Floor.NONE): void {
    this.move('place', 'queued', 'sending');
    this.fence = fence;
    this.queue.link(this);
    const heard = Math.max(this.queue.heardBehind, Number.isFinite(floor) ? floor : 0);
    if (heard > fence) this.noticed(heard);
  }

  /** `ride`: its process admits it behind `anchor`'s place, or on the tenure (`anchor` undefined). */
  ride(anchor: RedisWaiter | undefined): void {
    this.move('ride', 'riding', 'sending');
    this.anchor = anchor;
    this.queue.link(this);
  }

  /** Still sending: it waits for `leader`'s acquire reply before it rides or is sent (part of `ride`'s admission). */
  follow(leader: RedisWaiter): void {
    this.move('follow', 'sending', 'sending');
    (leader.followers ??= []).push(this);
    this.following = leader;
    this.queue.following++;
    this.queue.asking--;
  }

  /** No longer waits for a leader's reply (it came, or this one gives up). */
  unfollow(): void {
    if (!this.following) return;
    this.following = undefined;
    this.queue.following--;
    this.queue.asking++;
  }

  /** Its acquire call goes out now: newcomers follow it while it is on its way. */
  lead(): void {
    this.queue.leader = this;
  }

  /** Its reply came (or failed): the followers, who now ride or are sent. */
  takeFollowers(): RedisWaiter[] {
    const followers = this.followers ?? [];
    this.followers = undefined;
    if (this.queue.leader === this) this.queue.leader = undefined;
    return followers.filter((waiter) => waiter.following === this);
  }

  /** A waiter of another process queued at `place` behind it. */
  noticed(place: number): void {
    this.notice = Math.min(this.notice, place);
  }

  /** `confirm`: handed the key at `fence`, but the hand-off may have run out; Redis is asked. */
  confirm(fence: number): void {
    this.move('confirm', 'confirming', 'sending', 'queued');
    this.fence = fence;
  }

  /** `grant` (or `confirmed` from confirming): it holds the key. */
  grant(): void {
    if (this.phase === 'confirming') this.move('confirmed', 'granted', 'confirming');
    else this.move('grant', 'granted', 'sending', 'queued', 'riding');
    this.handed = true;
  }

  /** `requeue`: it has nothing in Redis (any more); it is sent again, under `token` when given. */
  requeue(token?: string): void {
    this.move('requeue', 'sending', 'confirming', 'queued', 'riding');
    this.fence = 0;
    this.anchor = undefined;
    if (token !== undefined) this.token = token;
  }

  /** `give-up`: timeout, abort, `maxPending`, close. `handed`: the key came as it gave up (its leave passes it on). */
  giveUp(handed = false): void {
    this.move('give-up', 'gave-up', 'sending', 'queued', 'riding', 'confirming');
    this.handed = handed;
  }

  private move(transition: string, to: WaiterPhase, ...from: WaiterPhase[]): void {
    if (!from.includes(this.phase))
      throw new Error(`nestjs-serialized: a ${this.phase} waiter cannot ${transition} (a bug: please report it)`);
    const asked = this.asking;
    this.phase = to;
    if (asked !== this.asking) this.queue.asking += asked ? -1 : 1;
  }
}

/**
 * This process's share of one key's Redis queue: its waiters of the key (the first
 * level of the two) and what it tells Redis about them. Every waiter has
 * its own place in the Redis queue (global arrival order), or rides without one on
 * this process's tenure of the key (the riders at the front) or on the place of the
 * waiter right before it (a run of riders behind that waiter, served when it gets
 * the key), but the process talks about the key with one voice: one heart-beat for
 * all of them, one wake-up at the holder's lease end. Exists only while someone of
 * this process waits for the key.
 */
export class RedisQueueShare {
  /**
   * Waiters whose acquisition or confirmation is on its way to Redis (neither linked
   * nor following): a newcomer may not ride ahead of them. How many callers wait
   * (what `maxPending` bounds) is the local layer's count, not kept here.
   */
  asking = 0;
  /** Waiters linked (with a place in the Redis queue, or riders), in arrival order. */
  queued = 0;
  /** Of those, riders: no place in Redis. */
  riders = 0;
  /** Waiters (not linked) waiting for the reply to `leader`'s acquire call before they ride or queue. */
  following = 0;
  /** The waiter whose acquire call went out last (newcomers follow it while it is on its way). */
  leader: RedisWaiter | undefined;
  first: RedisWaiter | undefined;
  last: RedisWaiter | undefined;
  /**
   * The latest place of a waiter of another process this process heard of queued
   * for the key (a holder notice, a floor a reply told; 0: none). A place whose
   * acquire reply comes later and is below it gets it as its notice (`place`):
   * a notice read while this process's next acquire was on its way would otherwise
   * close no place, and a rider could join that new place ahead of a waiter its
   * process had heard of (docs/protocol.md, Redis).
   */
  heardBehind = 0;
  private plannedBeat: Deadline | undefined;
  private beating = false;
  /** When a heart-beat asked for during another one should run. */
  private againAt = Infinity;

  constructor(
    readonly key: string,
    readonly keys: RedisLockKeys,
  ) {}

  /** A waiter of another process is queued at `place` (a place, or a floor: NONE and UNKNOWN tell nothing). */
  heardOf(place: number): void {
    if (Number.isFinite(place) && place > this.heardBehind) this.heardBehind = place;
  }

  /**
   * Links a waiter in arrival order: a rider at the tail; a waiter with a place
   * behind the last place before its own. Acquire replies are not always read in
   * the order Redis queued them (a command sent before the connection was ready
   * answers through more promise steps than one sent after), and the list keeps
   * Redis's order, which a tenure serves in. Only places can be behind it: a
   * newcomer follows a waiter on its way to a place instead of riding.
   */
  link(waiter: RedisWaiter): void {
    let before = this.last;
    if (!waiter.rider) while (before && before.phase === 'queued' && before.fence > waiter.fence) before = before.prev;
    const after = before ? before.next : this.first;
    waiter.prev = before;
    waiter.next = after;
    if (before) before.next = waiter;
    else this.first = waiter;
    if (after) after.prev = waiter;
    else this.last = waiter;
    this.queued++;
    if (waiter.rider) this.riders++;
  }

  /** Unlinks a waiter leaving the list (a rider, or a place granted or leaving). */
  unlink(waiter: RedisWaiter): void {
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.first = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.last = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.queued--;
    if (waiter.rider) this.riders--;
  }

  /** The place a newcomer would ride behind: this process's last place (the last waiter, or the anchor of the last rider). */
  get lastPlace(): RedisWaiter | undefined {
    const last = this.last;
    const place = last && (last.rider ? last.anchor : last);
    return place?.phase === 'queued' ? place : undefined;
  }

  /**
   * Unlinks a run of riders and `requeue`s them, in arrival order: those right
   * behind `after` (a waiter with a place that is leaving without the key: they
   * rode on that place), or with `after` undefined those at the front (their tenure
   * ended). They are to be sent for places of their own.
   */
  takeRun(after?: RedisWaiter): RedisWaiter[] {
    const riders: RedisWaiter[] = [];
    for (let w = after ? after.next : this.first; w && w.rider; w = w.next) riders.push(w);
    for (const w of riders) {
      this.unlink(w);
      w.requeue();
    }
    return riders;
  }

  /** Riders at the front (those a tenure serves before any waiter with a place), counted up to `limit`. */
  frontRiders(limit: number): number {
    let count = 0;
    for (let w = this.first; w && w.rider && count < limit; w = w.next) count++;
    return count;
  }

  /** The key's next heart-beat, while one is planned. */
  get heartbeat(): Deadline | undefined {
    return this.plannedBeat;
  }

  /** A heart-beat is on its way to Redis. */
  get heartbeating(): boolean {
    return this.beating;
  }

  /** The next heart-beat is `beat` (undefined: none planned; it fired or was cancelled). */
  planBeat(beat: Deadline | undefined): void {
    this.plannedBeat = beat;
  }

  /** A heart-beat asked for while one is on its way: the next runs no later than `at`. */
  beatAgainBy(at: number): void {
    this.againAt = Math.min(this.againAt, at);
  }

  /** A heart-beat goes out. */
  beatSent(): void {
    this.beating = true;
    this.againAt = Infinity;
  }

  /** Its reply came, or it failed: when the next was asked for meanwhile (Infinity: it was not). */
  beatAnswered(): number {
    const at = this.againAt;
    this.beating = false;
    this.againAt = Infinity;
    return at;
  }

  /** No waiter of this process is left for the key (the key's state may go). */
  get empty(): boolean {
    return this.queued + this.following + this.asking === 0;
  }

  /** Waiters with a place in the Redis queue. */
  get places(): number {
    return this.queued - this.riders;
  }

  /** Owner tokens of the waiters with a place in the Redis queue, in arrival order. */
  tokens(): string[] {
    const tokens: string[] = [];
    for (let w = this.first; w; w = w.next) if (!w.rider) tokens.push(w.token);
    return tokens;
  }
}
