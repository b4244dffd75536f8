import type { RedisCohorts } from './redis-cohorts';
import { QUEUED, SENDING, type KeyWaiters, type RedisWaiter } from '../waiting/redis-waiter';

/** What riders need from the waiter state machine. */
export interface RiderHost {
  /** This process hears its wake-up channel (a remote waiter's notice would reach it). */
  readonly listening: boolean;
  /** The provider is shutting down: nobody rides any more. */
  readonly closing: boolean;
  /** Sends the waiter's acquisition: it takes a place of its own. */
  enqueue(waiter: RedisWaiter): void;
}

/**
 * Waiters without a place of their own in the Redis queue (docs/semantics.md,
 * Riders). A rider waits in this process and is served by a local hand-off, either
 * on the process's tenure of the key (it holds the key: the riders at the front of
 * the key's list, see {@link RedisCohorts}) or behind the process's last place in
 * the queue while nobody of another process is known to be queued behind that place
 * (a run of riders behind that waiter, served by the tenure its place begins). A
 * newcomer that finds one of the process's waiters on its way to Redis follows it:
 * it waits for that reply, then rides or queues. Local arrival order holds
 * throughout: riders are linked behind every waiter of the process that came earlier.
 */
export class RedisRiders {
  constructor(
    private readonly host: RiderHost,
    private readonly cohorts: RedisCohorts,
  ) {}

  /** A new waiter rides, or follows a waiter on its way to Redis. False: it takes a place of its own. */
  ride(waiter: RedisWaiter): boolean {
    const queue = waiter.queue;
    if (this.host.closing || !this.host.listening || !this.cohorts.on) return false;
    if (queue.pending !== queue.queued + queue.following + 1) {
      // Someone of this process is on the way to a place (nobody may get ahead of it):
      // the newcomer waits for its reply, then rides behind it or queues.
      const leader = queue.leader;
      if (!leader || leader.phase !== SENDING) return false;
      (leader.followers ??= []).push(waiter);
      waiter.following = leader;
      queue.following++;
      return true;
    }
    const last = queue.last;
    const anchor = last && (last.rider ? last.anchor : last);
    if (anchor && anchor.phase === QUEUED && !anchor.rider) {
      // Behind this process's last place: only while nobody of another process is known to be queued behind it.
      if (anchor.notice !== Infinity) return false;
      return this.link(waiter, anchor);
    }
    return this.cohorts.mayRide(waiter) && this.link(waiter, undefined);
  }

  /** Links `waiter` as a rider behind `anchor`'s place, or on the tenure (`anchor` undefined). */
  private link(waiter: RedisWaiter, anchor: RedisWaiter | undefined): true {
    waiter.anchor = anchor;
    waiter.rider = true;
    waiter.phase = QUEUED;
    waiter.queue.link(waiter);
    waiter.queue.riders++;
    return true;
  }

  /**
   * The reply to `leader`'s acquisition came (or it failed): its followers ride
   * behind it if they may now, or queue (the first of them then leads the rest).
   */
  lead(leader: RedisWaiter): void {
    const followers = leader.followers;
    if (!followers) return;
    leader.followers = undefined;
    const queue = leader.queue;
    if (queue.leader === leader) queue.leader = undefined;
    for (const waiter of followers) {
      // Gave up meanwhile (`unfollow` already uncounted it).
      if (waiter.following !== leader) continue;
      waiter.following = undefined;
      queue.following--;
      if (!this.ride(waiter)) this.host.enqueue(waiter);
    }
  }

  /** A follower gives up before its leader's reply. */
  unfollow(waiter: RedisWaiter): void {
    if (!waiter.following) return;
    waiter.following = undefined;
    waiter.queue.following--;
  }

  /**
   * A waiter of another process queued at `place`, at the tail of the queue: behind
   * every place of this process before it, so no rider may join the last of them.
   */
  queuedBehind(queue: KeyWaiters | undefined, place: number): void {
    const last = queue?.last;
    const anchor = last && (last.rider ? last.anchor : last);
    if (anchor && anchor.phase === QUEUED && !anchor.rider && anchor.fence < place) anchor.notice = Math.min(anchor.notice, place);
  }

  /**
   * Unlinks `waiter`, which has a place and leaves it without the key (it gives up,
   * lost its place, or its hand-off is in doubt): the riders that rode on its place
   * are returned, to take places of their own. A waiter of another process that
   * queued behind its place told it, not the place before it: that one takes no more
   * riders (as if told that someone queued right behind it).
   */
  detach(waiter: RedisWaiter): RedisWaiter[] {
    const queue = waiter.queue;
    const before = waiter.prev && (waiter.prev.rider ? waiter.prev.anchor : waiter.prev);
    if (before && before.phase === QUEUED && !before.rider) before.notice = Math.min(before.notice, waiter.fence);
    const orphans = queue.takeRun(waiter);
    queue.unlink(waiter);
    return orphans;
  }

  /** The tenure of `queue`'s key ended: the riders at the front take places of their own. */
  unride(queue: KeyWaiters | undefined): void {
    if (queue) this.requeue(queue.takeRun());
  }

  /** Riders whose place or tenure is gone take places of their own, in arrival order. */
  requeue(riders: RedisWaiter[]): void {
    for (const waiter of riders) {
      waiter.phase = SENDING;
      waiter.anchor = undefined;
      this.host.enqueue(waiter);
    }
  }
}
