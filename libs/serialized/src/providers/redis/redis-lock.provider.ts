import { performance } from 'node:perf_hooks';
import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import type { ProviderAcquireOptions } from '../../acquire-options.interface';
import { validateAcquire } from '../../config/acquire-options.validator';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../errors';
import { HeldLocks } from '../../internal/held-locks';
import { PendingBudget } from '../../internal/pending-budget';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import { redisProviderOptions } from '../../config/provider-options.mapper';
import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { DeadlineQueue } from '../../internal/deadline-queue';
import { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import { OwnerTokens } from './owner-tokens';
import { keepingProcessAlive } from '../../internal/process-keep-alive';
import { RedisConnection, URGENT, type RedisClient } from './redis-connection';
import { RedisGrantCheck } from './redis-grant-check';
import { RedisKeyWaiters } from './redis-key-waiters';
import { RedisKeyspace, type RedisLockKeys } from './redis-keyspace';
import { RedisLock, type RedisLockContext } from './redis-lock';
import { RedisSafetyChecks } from './redis-safety-checks';
import { RedisScripts } from './redis-scripts';
import { CONFIRMING, QUEUED, RedisWaiter, SENDING, SETTLED } from './redis-waiter';
import { RedisHandOffs } from './redis-hand-offs';
import { RedisWakeUps } from './redis-wake-ups';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { RedisIdempotencyStore } from '../../idempotency/stores/redis-idempotency.store';

/** Options of {@link RedisLockProvider}; module options fill in all but the tuning knobs. */
export interface RedisLockProviderOptions extends LockProviderCommonOptions {
  /** `redis://` / `rediss://` URL: the library opens (lazily) and closes its own two connections. */
  url?: string;
  /** A standalone, Sentinel or Cluster client the app already has; the library never closes it. */
  client?: Redis | Cluster;
  /**
   * The backend bound (default 3000 ms): a call fails with `LockBackendError` when
   * the connection is not ready within it, or when its command has waited this
   * long without a single reply arriving on the connection (a hung or cut-off
   * Redis). A command that waits behind others whose replies keep coming is not
   * failed by it: under a burst, `waitTimeoutMs` ends waits (`LockTimeoutError`).
   */
  connectTimeoutMs?: number;
  /**
   * How long a waiter keeps its place in the Redis queue without a heart-beat
   * (default 5000 ms). Each process beats for its waiters of a key every third of
   * it, in the same call as the safety check; a waiter whose process died is
   * dropped after this long, and a hand-off grants at most this long until the new
   * holder renews, so a waiter that died just before its turn blocks the key for
   * at most this long. Use the same value in every process.
   */
  heartbeatMs?: number;
  /**
   * Most commands on the wire at once on the command connection (per node with a
   * Cluster; default 1000). More wait in this process, in order, with releases,
   * renewals, heart-beats and leaves ahead of new acquisitions; a waiter that gives
   * up while its acquisition still waits here is dropped without a round trip.
   */
  maxInFlight?: number;
}

/** Defaults of the Redis-only tuning knobs. */
export const REDIS_LOCK_DEFAULTS = {
  heartbeatMs: SERIALIZED_DEFAULTS.redisHeartbeatMs,
} as const;

type AcquireReply = [status: number, fence: number, pttl: number, handedMember: string, handedFence: number, handedPx: number];
type HandOffReply = [status: number, member?: string, fence?: number, px?: number];

/**
 * Distributed locks in Redis (standalone, Sentinel or Cluster, 6.2 or later), fair
 * across every process that shares the Redis.
 *
 * - **Acquire** is one script, one round trip: a free key with nobody waiting is
 *   taken at once (`SET ... PX`) with a fencing token from `INCR`; otherwise the
 *   caller takes its place in a queue in Redis, ordered by arrival at Redis.
 * - **Release** is an owner-checked script that hands the key straight to the
 *   first live waiter and tells its process by a message on that process's own
 *   channel (or, for a waiter of the releasing process, by the reply): the woken
 *   waiter already holds the key.
 * - **Waiting** costs no polling: one heart-beat / safety check per key and
 *   process every `heartbeatMs / 3`, and a check when the holder's lease would end,
 *   so a crashed holder's key passes on within one lease and a crashed waiter is
 *   dropped after `heartbeatMs`.
 * - **Holding** renews the lease every third of it; a lost lease aborts
 *   `lock.signal` with `LockLostError`.
 * - **Failing closed**: a call that cannot reach Redis within `connectTimeoutMs`
 *   (no ready connection, or no reply at all on it for that long) fails with
 *   `LockBackendError`; the provider recovers when Redis returns. A burst is not
 *   an outage: its callers wait within `waitTimeoutMs` (`LockTimeoutError`).
 *
 * After every lock is released, nothing is left in Redis but the fencing counter
 * (one per prefix; with Cluster, one per hash slot in use). See docs/providers/redis.md.
 */
export class RedisLockProvider extends LockProvider implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly deadlines = new DeadlineQueue({ unref: true, name: 'nestjs-serialized.redis-deadlines' });
  // Counted per key: `maxPending` tells a process that holds the key from one that does not.
  private readonly held = new HeldLocks<RedisLock>(true);
  private readonly tokens = new OwnerTokens();
  private readonly connection: RedisConnection;
  private readonly wakeUps: RedisWakeUps;
  private readonly scripts: RedisScripts;
  private readonly keyspace: RedisKeyspace;
  private readonly grants: RedisGrantCheck;
  private readonly checks: RedisSafetyChecks;
  private readonly handOffs: RedisHandOffs;
  /** Dates hand-off messages: runs while this process has waiters. */
  private readonly stalls: EventLoopStallMonitor;
  /** This process's waiters, per key (only while someone waits). */
  private readonly keys = new Map<string, RedisKeyWaiters>();
  /** This process's waiters, by owner token: where hand-offs find them. */
  private readonly waiters = new Map<string, RedisWaiter>();
  /** Leave calls on their way (shutdown lets them finish). */
  private readonly leaving = new Set<Promise<void>>();
  private readonly handOffArgs: readonly [number, string, string];
  private readonly lockContext: RedisLockContext;
  private readonly leaseMs: number;
  private readonly waitTimeoutMs: number;
  private readonly maxPending: number;
  /** `maxPendingTotal`: callers on their way or queued, across keys (a caller is counted until it holds or leaves). */
  private readonly budget: PendingBudget;
  private readonly shutdownGraceMs: number;
  private readonly heartbeatMs: number;
  /** How often a waiter whose budget ran out while its script had no answer looks again (see `waitEnded`). */
  private readonly recheckMs: number;
  private shuttingDown: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: RedisLockProviderOptions) {
    super();
    this.leaseMs = options.leaseMs ?? SERIALIZED_DEFAULTS.leaseMs;
    this.waitTimeoutMs = options.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs;
    this.maxPending = options.maxPending ?? SERIALIZED_DEFAULTS.maxPending;
    this.budget = new PendingBudget(options.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal);
    this.shutdownGraceMs = options.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs;
    this.heartbeatMs = Math.max(30, Math.ceil(options.heartbeatMs ?? REDIS_LOCK_DEFAULTS.heartbeatMs));
    const connectTimeoutMs = options.connectTimeoutMs ?? SERIALIZED_DEFAULTS.connectTimeoutMs;
    this.recheckMs = Math.max(10, connectTimeoutMs / 8);
    this.scripts = new RedisScripts();
    // Fine enough that a hand-off read at once is never mistaken for a late one.
    this.stalls = new EventLoopStallMonitor(Math.min(100, Math.max(10, this.heartbeatMs / 15)), 'nestjs-serialized.redis-stalls');
    this.connection = new RedisConnection(
      {
        url: options.url,
        client: options.client,
        connectTimeoutMs,
        maxInFlight: options.maxInFlight,
        slotOf: (key) => this.keyspace.slotOf(key),
      },
      this.deadlines,
      this.logger,
    );
    this.keyspace = new RedisKeyspace(options.keyPrefix ?? SERIALIZED_DEFAULTS.keyPrefix, this.connection.isCluster);
    this.handOffArgs = [this.heartbeatMs, this.keyspace.channelPrefix, this.tokens.session];
    this.wakeUps = new RedisWakeUps(
      this.connection,
      this.keyspace.channelPrefix + this.tokens.session,
      (message) => this.handOffs.onMessage(message),
      () => this.checkAllSoon(),
    );
    this.grants = new RedisGrantCheck(this.connection, this.scripts);
    this.handOffs = new RedisHandOffs(
      {
        waiter: (token) => this.waiters.get(token),
        settle: (waiter) => this.settle(waiter),
        leave: (key, keys, token) => this.leave(key, keys, token),
        enqueueAgain: (waiter) => {
          this.waiters.delete(waiter.token);
          waiter.token = this.tokens.next(waiter.leaseMs);
          this.waiters.set(waiter.token, waiter);
          this.enqueue(waiter);
        },
        lockFor: (waiter, fence, px, since) => this.grant(waiter.queue.key, waiter.queue.keys, waiter.token, fence, waiter.leaseMs, px, since),
      },
      this.grants,
      this.stalls,
    );
    this.checks = new RedisSafetyChecks({
      connection: this.connection,
      scripts: this.scripts,
      deadlines: this.deadlines,
      heartbeatMs: this.heartbeatMs,
      handOffArgs: this.handOffArgs,
      isCurrent: (queue) => this.keys.get(queue.key) === queue,
      waiter: (token) => this.waiters.get(token),
      handedOver: (member, fence, px, since) => this.handOffs.handedOver(member, fence, px, since),
      grantWaiter: (waiter, fence, px, since) => this.handOffs.grant(waiter, fence, px, since),
      dropWaiter: (waiter, error) => {
        this.settle(waiter);
        waiter.reject(error);
        this.leave(waiter.queue.key, waiter.queue.keys, waiter.token);
      },
      lostPlace: (waiter) => this.handOffs.waitAgain(waiter, false),
      closeKeyIfIdle: (queue) => this.closeKeyIfIdle(queue),
    });
    this.connection.onReconnect(() => {
      this.checkAllSoon();
      this.recheckHeld();
    });
    this.connection.onEnded(() => this.connectionEnded());
    this.lockContext = {
      connection: this.connection,
      scripts: this.scripts,
      deadlines: this.deadlines,
      handOffArgs: this.handOffArgs,
      handedOver: (member, fence, px, since) => this.handOffs.handedOver(member, fence, px, since),
      released: (lock) => this.held.delete(lock),
    };
  }

  /** Builds the provider from `SerializedModule` options (`redis.url` or `redis.client`). */
  static fromModuleOptions(options: ResolvedSerializedOptions): RedisLockProvider {
    return new RedisLockProvider(redisProviderOptions(options));
  }

  /** The client commands go through (yours, or the one the library opened). */
  get client(): RedisClient {
    return this.connection.client;
  }

  /** `@Idempotent`'s records: `<keyPrefix>:{<key>}:idem` (the key's slot), on the command connection. */
  createIdempotencyStore(): IdempotencyStore {
    return new RedisIdempotencyStore({
      run: (key, send) => this.connection.run(key, send),
      recordKeyOf: (key) => `${this.keyspace.keysOf(key).lock}:idem`,
    });
  }

  /** Names of the Redis keys this provider uses for `key` (for diagnostics and tests). */
  redisKeysOf(key: string): RedisLockKeys {
    return this.keyspace.keysOf(key);
  }

  /** Whether `redisKey` is one of this provider's fencing counters (the only keys meant to outlive locks). */
  isFencingCounter(redisKey: string): boolean {
    return this.keyspace.isFenceKey(redisKey);
  }

  /** Keys this process waits for right now (0 when nobody waits). */
  get waitingKeys(): number {
    return this.keys.size;
  }

  /** Locks held through this provider right now. */
  get heldLocks(): number {
    return this.held.size;
  }

  acquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock> {
    const invalid = validateAcquire(key, options, 'RedisLockProvider#acquire');
    if (invalid) return Promise.reject(invalid);
    if (this.held.closing) return Promise.reject(this.shutdownError(key));
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const leaseMs = options.leaseMs ?? this.leaseMs;
    const waitTimeoutMs = options.waitTimeoutMs ?? this.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.maxPending;
    let queue = this.keys.get(key);

    if (waitTimeoutMs <= 0) {
      return this.take(key, leaseMs, signal).then((lock) => lock ?? Promise.reject(new LockTimeoutError(key, waitTimeoutMs)));
    }
    const pending = queue?.pending ?? 0;
    const holding = this.held.holds(key);
    if (maxPending <= 0) {
      // None may wait: only a free key will do.
      const busy = new LockBusyError(key, 'max-pending', { maxPending });
      if (pending > 0 || holding) return Promise.reject(busy);
      return this.take(key, leaseMs, signal).then((lock) => lock ?? Promise.reject(busy));
    }
    // The caller becoming the holder is not a waiter. While this process holds the
    // key, every caller of it waits; while it does not, one of those on their way
    // may be about to take it, so one more is let through, and a reply showing more
    // than maxPending of them queued makes that newest one busy (`enqueued`).
    if (pending >= (holding ? maxPending : maxPending + 1)) {
      return Promise.reject(new LockBusyError(key, 'max-pending', { maxPending }));
    }

    if (!this.budget.take()) {
      // Every place is taken (maxPendingTotal): only a free key will do, as its caller would be no waiter.
      const busy = this.budget.busyError(key);
      if (pending > 0 || holding) return Promise.reject(busy);
      return this.take(key, leaseMs, signal).then((lock) => lock ?? Promise.reject(busy));
    }
    queue ??= this.openKey(key);
    queue.pending++;
    const token = this.tokens.next(leaseMs);
    const waiter = new RedisWaiter(queue, token, leaseMs, waitTimeoutMs, signal, performance.now());
    waiter.maxPending = maxPending;
    this.waiters.set(token, waiter);
    // The wait budget runs from the call, not from the reply: under a burst the
    // script may wait behind thousands of others on the connection.
    waiter.deadline = this.deadlines.schedule(waitTimeoutMs, () => this.waitEnded(waiter));
    if (signal) {
      waiter.onAbort = () => this.giveUp(waiter, signal.reason);
      signal.addEventListener('abort', waiter.onAbort, { once: true });
    }
    this.enqueue(waiter);
    return waiter.promise;
  }

  tryAcquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock | null> {
    const invalid = validateAcquire(key, options, 'RedisLockProvider#tryAcquire');
    if (invalid) return Promise.reject(invalid);
    if (this.held.closing) return Promise.reject(this.shutdownError(key));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    return this.take(key, options.leaseMs ?? this.leaseMs, options.signal);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await (this.shuttingDown ??= keepingProcessAlive(() => this.shutDown()));
  }

  async onApplicationShutdown(): Promise<void> {
    await (this.closing ??= keepingProcessAlive(() => this.closeConnections()));
  }

  /**
   * Shuts down outside Nest: waiters and newcomers get `LockBackendError`, holders
   * get up to `shutdownGraceMs` to release, then renewals stop and the library's own
   * connections close (a client passed in stays open). The process stays alive
   * until it is done, so a script may end with `await provider.close()`.
   */
  async close(): Promise<void> {
    await this.beforeApplicationShutdown();
    await this.onApplicationShutdown();
  }

  /** Takes the key if it is free and nobody waits (mode "try"); `null` otherwise. */
  private take(key: string, leaseMs: number, signal: AbortSignal | undefined): Promise<Lock | null> {
    const keys = this.keys.get(key)?.keys ?? this.keyspace.keysOf(key);
    const token = this.tokens.next(leaseMs);
    let sentAt = -Infinity;
    return this.connection
      .run(key, (client) => {
        sentAt = performance.now();
        return this.scripts.acquire.run(client, [
          keys.lock, keys.queue, keys.heartbeats, keys.fence, token, leaseMs, 'try', this.heartbeatMs, ...this.handOffArgs,
        ]);
      })
      .then(
        (reply) => {
          const [status, fence, pttl, handedMember, handedFence, handedPx] = reply as AcquireReply;
          if (handedMember) this.handOffs.handedOver(handedMember, handedFence, handedPx, sentAt);
          if (status === 1) return this.taken(key, keys, token, fence, leaseMs, pttl, sentAt, signal);
          if (status === 2) {
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

  /** `take` got the key: the caller holds it once it is sure the lease still runs. */
  private async taken(
    key: string, keys: RedisLockKeys, token: string, fence: number, leaseMs: number, px: number, since: number, signal: AbortSignal | undefined,
  ): Promise<Lock | null> {
    if (!this.grants.isFresh(since, px)) {
      // The reply came too late to count (a stalled event loop): Redis decides.
      const confirmed = await this.grants.confirm(key, keys, token, leaseMs).catch((error: unknown) => {
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
    return this.grant(key, keys, token, fence, leaseMs, px, since);
  }

  private grant(key: string, keys: RedisLockKeys, token: string, fence: number, leaseMs: number, px: number, grantedAt: number): RedisLock {
    const lock = new RedisLock(this.lockContext, key, keys, token, BigInt(fence), leaseMs, px, grantedAt);
    this.held.add(lock);
    return lock;
  }

  private openKey(key: string): RedisKeyWaiters {
    const queue = new RedisKeyWaiters(key, this.keyspace.keysOf(key), (q) => this.checks.run(q));
    this.keys.set(key, queue);
    return queue;
  }

  private closeKeyIfIdle(queue: RedisKeyWaiters): void {
    if (queue.pending > 0 || queue.checking) return;
    if (queue.check) this.deadlines.cancel(queue.check);
    queue.check = undefined;
    if (this.keys.get(queue.key) === queue) this.keys.delete(queue.key);
    if (this.keys.size === 0) this.stalls.stop();
  }

  /** Sends the waiter's acquisition (mode "wait") under its current owner token. */
  private enqueue(waiter: RedisWaiter): void {
    const { key, keys } = waiter.queue;
    const token = waiter.token;
    let sentAt = -Infinity;
    // From now on a hand-off message may come for it, and has to be dated.
    this.stalls.start();
    this.connection
      .run(
        key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.acquire.run(client, [
            keys.lock, keys.queue, keys.heartbeats, keys.fence, token, waiter.leaseMs, 'wait', this.heartbeatMs, ...this.handOffArgs,
          ]);
        },
        // Given up while still queued in this process: never sent, nothing to undo (`waiter.skip()`).
        waiter,
      )
      .then(
        (reply) => this.enqueued(waiter, token, reply as AcquireReply, sentAt),
        (error: unknown) => this.enqueueFailed(waiter, token, error),
      );
  }

  private enqueued(waiter: RedisWaiter, token: string, reply: AcquireReply, sentAt: number): void {
    const [status, fence, pttl, handedMember, handedFence, handedPx] = reply;
    if (handedMember) this.handOffs.handedOver(handedMember, handedFence, handedPx, sentAt);
    const { key, keys } = waiter.queue;
    if (waiter.token !== token) {
      // An earlier attempt of a waiter that now waits under a new token: undo it.
      if (status !== -1) this.leave(key, keys, token);
      return;
    }
    if (waiter.phase === SETTLED) {
      // Handed the key by a message that overtook this reply (nothing to do), or it
      // gave up meanwhile (shutdown): undo what the call took.
      if (!waiter.granted && status !== -1) this.leave(key, keys, token);
      return;
    }
    // Handed the key by a message that overtook this reply; Redis is being asked whether it still holds.
    if (waiter.phase === CONFIRMING) return;
    if (status === 1) {
      this.handOffs.grant(waiter, fence, pttl, sentAt);
      return;
    }
    if (status !== 0) {
      this.settle(waiter);
      waiter.reject(new LockBackendError('The acquisition reached Redis twice after a reconnect; it was undone', { key }));
      this.leave(key, keys, token);
      return;
    }
    waiter.fence = fence;
    if (performance.now() - waiter.startedAt >= waiter.waitTimeoutMs) {
      // Its budget ran out while the reply was on its way (see `waitEnded`).
      this.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs), true);
      return;
    }
    if (waiter.queue.queued >= waiter.maxPending) {
      // It was let through in case it became the holder, and it did not: one waiter too many.
      this.giveUp(waiter, new LockBusyError(key, 'max-pending', { maxPending: waiter.maxPending }), true);
      return;
    }
    // Its deadline and abort listener run since the call; it now has a place.
    waiter.phase = QUEUED;
    waiter.queue.link(waiter);
    this.wakeUps.ensure();
    this.checks.schedule(waiter.queue, pttl);
  }

  /**
   * A waiter's budget ran out. Queued in Redis (or asking whether a hand-off still
   * stands): it leaves. Its script still unanswered: if the connection has answered
   * other commands since it was sent, Redis is up and merely busy, so it is a
   * timeout like any other (the reply, when it comes, undoes what the script took).
   * If nothing has come back since, Redis may be gone: that is for the backend bound
   * to say (`LockBackendError` within `connectTimeoutMs`, never a 429 for an
   * outage), so it looks again shortly, until a reply or the backend bound settles it.
   */
  private waitEnded(waiter: RedisWaiter): void {
    waiter.deadline = undefined;
    if (waiter.phase === SETTLED) return;
    const key = waiter.queue.key;
    if (waiter.phase !== SENDING || this.connection.answeredSince(key, waiter.startedAt)) {
      this.giveUp(waiter, new LockTimeoutError(key, waiter.waitTimeoutMs));
      return;
    }
    waiter.deadline = this.deadlines.schedule(this.recheckMs, () => this.waitEnded(waiter));
  }

  private enqueueFailed(waiter: RedisWaiter, token: string, error: unknown): void {
    const { key, keys } = waiter.queue;
    if (waiter.token === token) {
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
  private giveUp(waiter: RedisWaiter, error: unknown, hasPlace = waiter.phase === QUEUED || waiter.phase === CONFIRMING): void {
    if (waiter.phase === SETTLED) return;
    this.settle(waiter);
    waiter.reject(error);
    // A waiter still sending is undone when its reply arrives.
    if (hasPlace) this.leave(waiter.queue.key, waiter.queue.keys, waiter.token);
  }

  private settle(waiter: RedisWaiter): void {
    if (waiter.phase === SETTLED) return;
    const queue = waiter.queue;
    if (waiter.phase === QUEUED) queue.unlink(waiter);
    waiter.phase = SETTLED;
    queue.pending--;
    this.budget.give();
    this.waiters.delete(waiter.token);
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    if (waiter.onAbort) waiter.signal!.removeEventListener('abort', waiter.onAbort);
    waiter.deadline = waiter.onAbort = undefined;
    this.closeKeyIfIdle(queue);
  }

  /** Leaves the queue, or passes the key on if it was handed over meanwhile. Never throws. */
  private leave(key: string, keys: RedisLockKeys, token: string): void {
    let sentAt = -Infinity;
    const call = this.connection
      .run(
        key,
        (client) => {
          sentAt = performance.now();
          return this.scripts.leave.run(client, [keys.lock, keys.queue, keys.heartbeats, token, ...this.handOffArgs]);
        },
        URGENT,
      )
      .then(
        (reply) => {
          const [status, member, fence, px] = reply as HandOffReply;
          if (status === 2) this.handOffs.handedOver(member!, fence!, px!, sentAt);
        },
        (error: unknown) => {
          // The place expires with its heart-beats, a grant with its lease.
          this.logger.debug(`Could not leave the queue of lock "${key}": ${(error as Error)?.message ?? error}`);
        },
      )
      .finally(() => this.leaving.delete(call));
    this.leaving.add(call);
  }

  /** After a reconnect or (re)subscription: messages may have been lost, so every waiting key is checked now. */
  private checkAllSoon(): void {
    for (const queue of this.keys.values()) this.checks.schedule(queue, -2);
  }

  /**
   * After a reconnect: Redis may have lost its data (a restart without persistence,
   * a fail-over) and a newcomer may already hold a key. Every held lock asks at once
   * (owner-checked), so each one that is gone aborts its signal now, not at its next
   * renewal.
   */
  private recheckHeld(): void {
    for (const lock of this.held.values()) lock.recheck();
  }

  /** The command connection ended for good (an app's client that gave up): no lock can be renewed. */
  private connectionEnded(): void {
    for (const lock of this.held.values()) lock.abandon('the Redis connection ended, so its lease can no longer be renewed');
  }

  private async shutDown(): Promise<void> {
    this.held.close();
    for (const waiter of [...this.waiters.values()]) {
      this.giveUp(waiter, this.shutdownError(waiter.queue.key));
    }
    await Promise.allSettled([...this.leaving]);
    await this.held.drain(this.shutdownGraceMs);
  }

  private async closeConnections(): Promise<void> {
    await this.beforeApplicationShutdown();
    // Each holder's signal aborts here (LockLostError): whatever still runs is told before its lease can end.
    for (const lock of [...this.held.values()]) lock.stopRenewing();
    await Promise.allSettled([...this.leaving]);
    await Promise.all([this.wakeUps.close(), this.connection.close()]);
    this.deadlines.clear();
  }

  private shutdownError(key: string): LockBackendError {
    return new LockBackendError('The lock provider is shutting down', { key });
  }
}
