import type { HandOffMode } from '../../../acquire-options.interface';
import { performance } from 'node:perf_hooks';
import { LockLostError } from '../../../errors/index';
import type { Lock } from '../../../lock.interface';
import type { Deadline, DeadlineQueue } from '../../../internal/deadline.queue';
import { LocalLock } from '../../../local/local.lock';
import type { LockLines } from '../../../local/lock.lines';
import * as commands from '../protocol/redis.commands';
import type { Redis } from '../protocol/redis.commands';
import type { RedisLockKeys } from '../protocol/redis.keyspace';

/** Why a lock whose renewals failed until its lease ran out is lost (the lease-end timer's and the clock's verdict alike). */
const NOT_RENEWED = 'its lease ran out before a renewal reached Redis';
/** Why a lock whose lease ran out with no renewal failed is lost: its process did not run in time to renew it. */
const STALLED = 'its lease ran out while its holder ran (the event loop or the process stalled past it)';

/** What a held lock sends its renewals with: the command connection, the scripts and the provider's timers. */
export interface RedisLockParts extends Redis {
  readonly deadlines: DeadlineQueue;
}

/** Where a lock lets go: the provider's local layer (`LockLines.released`), which asks the backend. */
type LetGo = Pick<LockLines<RedisLock>, 'released'>;

/** Shortest pause before retrying a renewal that failed while the lease still runs. */
const RENEW_RETRY_MIN_MS = 20;
const RENEW_RETRY_MAX_MS = 1000;

/**
 * A key held in Redis under this lock's owner token. Its lease is renewed about
 * every third of the lease while held (by the provider's one deadline timer, no
 * timer of its own); renewal stops synchronously on `release()`. A renewal that
 * finds the key gone or taken, or cannot reach Redis before the lease ends, aborts
 * `signal` with `LockLostError`; nothing is ever thrown from a timer.
 */
export class RedisLock extends LocalLock implements Lock {
  private renewal: Deadline | undefined;
  /** The lease end, armed while a renewal is unconfirmed. */
  private guard: Deadline | undefined;
  private leaseEnd: number;
  /** Length of the lease as last granted or renewed (a hand-off grants less than `leaseMs` until renewed). */
  private leaseWindow: number;
  private renewing = true;
  /**
   * A renewal is on its way to Redis. It stands in for nothing: the lease is the one
   * last confirmed (`leaseEnd`) until its reply says otherwise.
   */
  private renewalInFlight = false;
  private lastRenewError: unknown;
  private releasing: Promise<void> | undefined;
  /** Whether, at release, its lease was one this process is sure of (see {@link passable}). */
  private passableAtRelease = false;
  private readonly onRenewal = (): void => this.renew();
  private readonly onLeaseEnd = (): void => {
    this.guard = undefined;
    // The confirmed lease ended: a renewal still in flight may reach Redis after the
    // key expired there and went to someone else, so it keeps nothing until it is
    // answered — by then the holder may have written. The holder is told now.
    if (this.held) this.expire();
  };

  constructor(
    private readonly context: RedisLockParts,
    private readonly lines: LetGo,
    readonly key: string,
    readonly keys: RedisLockKeys,
    /** The owner token this acquisition holds the key under. */
    readonly token: string,
    readonly fencingToken: bigint,
    private leaseMs: number,
    grantedPx: number,
    grantedAt: number,
    /** How this holder passes the key on at release (`undefined`: the provider's mode; see `TenureRegistry`). */
    readonly handoff: HandOffMode | undefined,
    /** It holds the key beside others (`concurrency` > 1, `shared`): renewed by shaped-extend.lua, never handed on in-process. */
    readonly shaped = false,
  ) {
    super();
    // Counted from when the successful attempt was sent (or the hand-off heard of).
    this.leaseEnd = grantedAt + grantedPx;
    this.leaseWindow = grantedPx;
    this.scheduleRenewal(grantedAt + grantedPx / 3 - performance.now());
  }

  async extend(ms: number = this.leaseMs): Promise<void> {
    if (this.released) throw new LockLostError(this.key, 'it was already released');
    if (this.lost) throw this.lost;
    if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`extend(ms) needs a positive number of milliseconds, got ${ms}`);
    const px = Math.ceil(ms);
    const sentAt = performance.now();
    const { reply: ours } = await commands.extend(
      this.context,
      this.key,
      this.keys,
      this.token,
      px,
      this.fencingToken,
      'An extension',
      this.shaped,
    );
    if (this.released) throw new LockLostError(this.key, 'it was released while being extended');
    if (!ours) {
      if (this.held) this.lose('it was no longer ours when extended (its lease had run out)');
      throw this.lost;
    }
    // Told meanwhile (its lease ran out before the reply came): it stays lost. Otherwise the
    // owner-checked success proves the key stayed ours throughout, and the new lease counts.
    if (!this.held) throw this.lost;
    this.leaseMs = px;
    this.leaseEnd = sentAt + px;
    this.leaseWindow = px;
    this.cancelGuard();
    this.cancelRenewal();
    this.scheduleRenewal(px / 3);
  }

  /** Lease still ahead of it (ms), as this process knows it. */
  leaseLeft(): number {
    return Math.max(0, this.leaseEnd - performance.now());
  }

  /**
   * Lets go of the key: renewals stop now, and the provider's local layer asks the
   * backend to hand it on or give it back (`RedisBackend.release`). Idempotent.
   */
  release(): Promise<void> {
    // A local hand-off needs a lease this process is sure of: renewals healthy and
    // at least half of it ahead (the next holder renews it on its own schedule).
    const passable =
      this.held &&
      this.renewing &&
      !this.renewalInFlight &&
      this.lastRenewError === undefined &&
      this.leaseEnd - performance.now() >= this.leaseWindow / 2;
    if (!this.markReleased()) return this.releasing!;
    this.passableAtRelease = passable;
    this.cancelRenewal();
    this.cancelGuard();
    return (this.releasing = this.lines.released(this));
  }

  /** Released with a lease this process was sure of: it may pass in-process to the next holder. */
  get passable(): boolean {
    return this.passableAtRelease;
  }

  /**
   * The release's reply says the key was no longer its own: its lease had run out
   * while its holder ran, and nobody had told it. The loss, to log once (undefined
   * when it was known already).
   */
  lostAtRelease(): LockLostError | undefined {
    if (this.lost) return undefined;
    const error = new LockLostError(this.key, 'the key was no longer its own at release: its lease had run out while its holder ran');
    this.markLost(error);
    return error;
  }

  /**
   * Shutdown past its grace period: no more renewals, so the lease runs out on its
   * own. The holder is told now, while the key is still its own: `signal` aborts
   * with `LockLostError` before anyone else can take the key.
   */
  stopRenewing(): void {
    this.renewing = false;
    this.cancelRenewal();
    this.cancelGuard();
    if (this.held) {
      this.lose('the provider shut down past its grace period and stopped renewing its lease, which now runs out on its own');
    }
  }

  /**
   * Asks Redis now, owner-checked, whether the key is still this lock's (a renewal
   * ahead of time): after a reconnect Redis may have lost it. A key that is gone
   * aborts `signal`; one that is still ours is renewed.
   */
  recheck(): void {
    if (!this.held || !this.renewing || this.renewalInFlight) return;
    this.cancelRenewal();
    this.renew();
  }

  /** The provider can no longer renew it (its connection ended for good): `signal` aborts now. */
  abandon(reason: string): void {
    if (this.held) this.lose(reason);
  }

  private scheduleRenewal(delayMs: number): void {
    if (!this.renewing || !this.held) return;
    this.renewal = this.context.deadlines.schedule(Math.max(0, delayMs), this.onRenewal);
  }

  /**
   * `renew`: an owner-checked extension of the lease, sent only while the lease
   * runs. Once it has run out (the renewal falls due after a stall: timers run
   * before the I/O the section waits for) the key may be someone else's, and no
   * renewal can make that undone: the loss is declared now and nothing is sent.
   */
  private renew(): void {
    this.renewal = undefined;
    if (!this.held || !this.renewing) return;
    const sentAt = performance.now();
    if (sentAt >= this.leaseEnd) return this.expire();
    const px = this.leaseMs;
    this.guard ??= this.context.deadlines.schedule(this.leaseEnd - sentAt, this.onLeaseEnd);
    this.renewalInFlight = true;
    // With replica acknowledgements on, one they do not confirm fails like one that found no Redis.
    commands.extend(this.context, this.key, this.keys, this.token, px, this.fencingToken, undefined, this.shaped).then(
      ({ reply: ours }) => this.renewed(ours, sentAt, px),
      (error: unknown) => this.renewalFailed(error),
    );
  }

  /**
   * `renewed`: the renewal's reply. A success proves the key stayed ours from before
   * the lease ended until Redis ran it (the script compares the owner token), so the
   * lease now counts from when it was sent — unless the holder was told meanwhile.
   */
  private renewed(ok: boolean, sentAt: number, px: number): void {
    this.renewalInFlight = false;
    if (!this.held) return;
    if (!ok) {
      this.lose('its lease ran out and the key was no longer ours at renewal');
      return;
    }
    this.cancelGuard();
    this.lastRenewError = undefined;
    this.leaseEnd = sentAt + px;
    this.leaseWindow = px;
    this.scheduleRenewal(px / 3);
  }

  private renewalFailed(error: unknown): void {
    this.renewalInFlight = false;
    if (!this.held) return;
    this.lastRenewError = error;
    const left = this.leaseEnd - performance.now();
    if (left <= 0) {
      this.lose('its lease could not be renewed before it ran out', error);
      return;
    }
    // Keep trying while the lease lasts; the guard at the lease end decides.
    this.scheduleRenewal(Math.min(Math.max(left / 4, RENEW_RETRY_MIN_MS), RENEW_RETRY_MAX_MS));
  }

  /**
   * By the monotonic clock: the lease as last confirmed (granted, renewed or
   * extended, counted from when that request was sent) has run out, so the key may
   * be someone else's. A renewal in flight does not count until it is answered.
   */
  protected override expiredNow(): LockLostError | undefined {
    if (performance.now() < this.leaseEnd) return undefined;
    this.cancelRenewal();
    this.cancelGuard();
    return this.expiry();
  }

  /** `expire`: the confirmed lease ran out while held; the holder is told now. */
  private expire(): void {
    this.cancelRenewal();
    this.cancelGuard();
    this.markLost(this.expiry());
  }

  /** Renewals that failed are why the lease was not extended; a stall is only the explanation when none did. */
  private expiry(): LockLostError {
    if (this.lastRenewError !== undefined) return new LockLostError(this.key, NOT_RENEWED, this.lastRenewError);
    return new LockLostError(this.key, STALLED);
  }

  private lose(reason: string, cause?: unknown): void {
    this.cancelRenewal();
    this.cancelGuard();
    this.markLost(new LockLostError(this.key, reason, cause));
  }

  private cancelRenewal(): void {
    if (this.renewal) this.context.deadlines.cancel(this.renewal);
    this.renewal = undefined;
  }

  private cancelGuard(): void {
    if (this.guard) this.context.deadlines.cancel(this.guard);
    this.guard = undefined;
  }
}
