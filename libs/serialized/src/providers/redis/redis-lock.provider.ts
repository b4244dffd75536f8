import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import type { ProviderAcquireOptions } from '../../acquire-options.interface';
import { validateAcquire } from '../../config/acquire-options.validator';
import { LockBackendError, LockBusyError, LockTimeoutError } from '../../errors';
import { DeadlineQueue } from '../../internal/deadline-queue';
import { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import { HeldLocks } from '../../local/held-locks';
import { PendingBudget } from '../../local/pending-budget';
import { keepingProcessAlive } from '../../internal/process-keep-alive';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { RedisIdempotencyStore } from '../../idempotency/stores/redis-idempotency.store';
import type { Lock } from '../../lock.interface';
import { LockProvider } from '../../lock.provider';
import type { LockDoor } from '../../local/lock-door.interface';
import { redisProviderOptions } from '../../config/provider-options.mapper';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import { OwnerTokens } from './protocol/owner-tokens';
import { RedisClientOwner, type RedisClient } from './transport/redis-client';
import { RedisConnection, URGENT } from './transport/redis-connection';
import { ReplicaAcks } from './transport/replica-acks';
import { RedisKeyspace, type RedisLockKeys } from './protocol/redis-keyspace';
import type { RedisLock } from './holding/redis-lock';
import { resolveRedisLockOptions, type RedisLockProviderOptions, type ResolvedRedisLockOptions } from './redis-lock-provider.options';
import { RedisScripts } from './protocol/redis-scripts';
import { withTimeout } from '../../observability/with-timeout';
import { RedisWaiters } from './waiting/redis-waiters';
import { RedisLockInspector } from './redis-lock.inspector';
import type { KeyInspector } from '../../inspect/key-inspector.interface';

export {
  REDIS_LOCK_DEFAULTS,
  REDIS_LOCK_LIMITS,
  type RedisLockProviderOptions,
  type RedisReplicaAcks,
} from './redis-lock-provider.options';

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
 * - **Waiting** costs no polling: one heart-beat per key and
 *   process every `heartbeatMs / 3`, and one when the holder's lease would end,
 *   so a crashed holder's key passes on within one lease and a crashed waiter is
 *   passed over after `heartbeatMs`.
 * - **Holding** renews the lease every third of it; a lost lease aborts
 *   `lock.signal` with `LockLostError`.
 * - **Failing closed**: a call that cannot reach Redis within `connectTimeoutMs`
 *   (no ready connection, or no reply at all on it for that long, not counting
 *   time this process itself was not running) fails with `LockBackendError`; the
 *   provider recovers when Redis returns. A burst is not an outage: its callers
 *   wait within `waitTimeoutMs` (`LockTimeoutError`).
 *
 * The rooms (docs/architecture.md, *The Redis provider*): transport/ (the
 * connection, its client, readiness gate and reply streams), protocol/ (keys,
 * tokens, one typed gateway per Lua script, the commands and channel messages),
 * waiting/ ({@link RedisWaiters}: every waiter transition, tries, heart-beats,
 * leaves), holding/ (`RedisLock`, a held key) and local-handoff/ (cohorts, riders,
 * tenures: decisions only).
 *
 * After every lock is released, nothing is left in Redis but the fencing counter
 * (one per prefix; with Cluster, one per hash slot in use). See docs/providers/redis.md.
 */
export class RedisLockProvider extends LockProvider implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly deadlines = new DeadlineQueue({ unref: true, name: 'nestjs-serialized.redis-deadlines' });
  // Counted per key: `maxPending` tells a process that holds the key from one that does not.
  private readonly held = new HeldLocks<RedisLock>(true);
  private readonly options: ResolvedRedisLockOptions;
  private readonly connection: RedisConnection;
  private readonly keyspace: RedisKeyspace;
  private readonly waiters: RedisWaiters;
  /** `maxPendingTotal`: callers on their way or queued, across keys (a caller counts until it holds or leaves). */
  private readonly budget: PendingBudget;
  private shuttingDown: Promise<void> | undefined;
  /**
   * How `LockService` reaches this provider past validation (it validated the call);
   * Redis grants nothing synchronously. @internal
   */
  readonly lines: LockDoor = {
    acquire: (key, options) => this.acquireValidated(key, options),
    tryAcquire: (key, options) => this.tryAcquireValidated(key, options),
    acquireNow: () => undefined,
  };
  private closing: Promise<void> | undefined;
  /** `LockService.inspect`: one read-only script and this process's own holders and waiters (typed by its interface). @internal */
  readonly inspector: KeyInspector;

  constructor(options: RedisLockProviderOptions) {
    super();
    this.options = resolveRedisLockOptions(options);
    const { heartbeatMs, connectTimeoutMs, maxInFlight } = this.options;
    const tokens = new OwnerTokens();
    // The options type the app's client by its shape (no ioredis typings needed); it is an ioredis client.
    const client = options.client as RedisClient | undefined;
    // Known before the connection: whether keys are routed per hash slot.
    this.keyspace = new RedisKeyspace(this.options.keyPrefix, RedisClientOwner.isClusterClient(client));
    const keyspace = this.keyspace;
    this.connection = new RedisConnection(
      { url: options.url, client, connectTimeoutMs, maxInFlight, slotOf: keyspace.isCluster ? (key) => keyspace.slotOf(key) : undefined },
      this.deadlines,
      this.logger,
    );
    const scripts = new RedisScripts({
      heartbeatMs,
      channelPrefix: keyspace.channelPrefix,
      session: tokens.session,
      block: this.options.maxLocalHandOffs + 1,
    });
    // Dates hand-off messages while this process has waiters; fine enough that a
    // hand-off read at once is never mistaken for a late one.
    const stalls = new EventLoopStallMonitor(Math.min(100, Math.max(10, heartbeatMs / 15)), 'nestjs-serialized.redis-stalls');
    this.waiters = new RedisWaiters({
      connection: this.connection,
      scripts,
      keyspace,
      tokens,
      deadlines: this.deadlines,
      held: this.held,
      stalls,
      heartbeatMs,
      logger: this.logger,
      budget: (this.budget = new PendingBudget(this.options.maxPendingTotal)),
      handoff: this.options.handoff,
      maxLocalHandOffs: this.options.maxLocalHandOffs,
      replicas:
        this.options.replicas &&
        new ReplicaAcks(
          this.options.replicas.acks,
          this.options.replicas.timeoutMs,
          keyspace.isCluster ? (key) => keyspace.slotOf(key) : undefined,
        ),
    });
    this.inspector = new RedisLockInspector({
      connection: this.connection,
      keyspace,
      session: tokens.session,
      held: this.held,
      waiters: this.waiters,
    });
    this.connection.onReconnect(() => {
      this.waiters.resync();
      // Redis may have lost its data (a restart without persistence, a fail-over):
      // every held lock asks now (owner-checked), so a lost one aborts its signal at once.
      for (const lock of this.held.values()) lock.recheck();
    });
    this.connection.onEnded(() => {
      // An app's client that gave up for good: no lock can be renewed.
      for (const lock of this.held.values()) lock.abandon('the Redis connection ended, so its lease can no longer be renewed');
    });
  }

  /** Builds the provider from `SerializedModule` options (`redis.url` or `redis.client`). */
  static fromModuleOptions(options: ResolvedSerializedOptions): RedisLockProvider {
    return new RedisLockProvider(redisProviderOptions(options));
  }

  /** The client commands go through (yours, or the one the library opened). @internal */
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

  /** Health: one `PING` on the command connection, sent ahead of queued acquisitions, bounded by `timeoutMs`. */
  override ping(timeoutMs: number): Promise<void> {
    if (this.held.closing) return Promise.reject(LockBackendError.shuttingDown());
    return withTimeout(
      this.connection.run('', (client) => client.ping(), URGENT),
      timeoutMs,
      'Redis',
    ).then(() => undefined);
  }

  /** Diagnostics (for tests and health checks): names of the Redis keys this provider uses for `key`. */
  redisKeysOf(key: string): RedisLockKeys {
    return this.keyspace.keysOf(key);
  }

  /** Diagnostics: whether `redisKey` is one of this provider's fencing counters (the only keys meant to outlive locks). */
  isFencingCounter(redisKey: string): boolean {
    return this.keyspace.isFenceKey(redisKey);
  }

  /** Diagnostics: keys this process waits for right now (0 when nobody waits). */
  get waitingKeys(): number {
    return this.waiters.size;
  }

  /**
   * Diagnostics: how many times a released key went straight to a waiter of this
   * process, in-process (local hand-off, no Redis round trip), since the start.
   */
  get localHandOffs(): number {
    return this.waiters.cohorts.handOffs;
  }

  /** Diagnostics: locks held through this provider right now. */
  get heldLocks(): number {
    return this.held.size;
  }

  /** The heart-beat timeout in use (validated; see {@link RedisLockProviderOptions.heartbeatMs}). */
  get heartbeatMs(): number {
    return this.options.heartbeatMs;
  }

  acquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock> {
    const invalid = validateAcquire(key, options, 'RedisLockProvider#acquire');
    if (invalid) return Promise.reject(invalid);
    return this.acquireValidated(key, options);
  }

  /** `acquire` once `key` and `options` are known valid (`LockService` validated them). */
  private acquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock> {
    if (this.held.closing) return Promise.reject(LockBackendError.shuttingDown(key));
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const leaseMs = options.leaseMs ?? this.options.leaseMs;
    const waitTimeoutMs = options.waitTimeoutMs ?? this.options.waitTimeoutMs;
    const maxPending = options.maxPending ?? this.options.maxPending;

    if (waitTimeoutMs <= 0) {
      return this.waiters
        .tryAcquire(key, leaseMs, signal, options.handoff)
        .then((lock) => lock ?? Promise.reject(new LockTimeoutError(key, waitTimeoutMs)));
    }
    const pending = this.waiters.pendingOf(key);
    const holding = this.held.holds(key);
    if (maxPending <= 0) {
      // None may wait: only a free key will do.
      const busy = new LockBusyError(key, 'max-pending', { maxPending });
      if (pending > 0 || holding) return Promise.reject(busy);
      return this.waiters.tryAcquire(key, leaseMs, signal, options.handoff).then((lock) => lock ?? Promise.reject(busy));
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
      return this.waiters.tryAcquire(key, leaseMs, signal, options.handoff).then((lock) => lock ?? Promise.reject(busy));
    }
    return this.waiters.wait({ key, leaseMs, waitTimeoutMs, maxPending, signal, handoff: options.handoff });
  }

  tryAcquire(key: string, options: ProviderAcquireOptions = {}): Promise<Lock | null> {
    const invalid = validateAcquire(key, options, 'RedisLockProvider#tryAcquire');
    if (invalid) return Promise.reject(invalid);
    return this.tryAcquireValidated(key, options);
  }

  /** `tryAcquire` once `key` and `options` are known valid (`LockService` validated them). */
  private tryAcquireValidated(key: string, options: ProviderAcquireOptions): Promise<Lock | null> {
    if (this.held.closing) return Promise.reject(LockBackendError.shuttingDown(key));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    return this.waiters.tryAcquire(key, options.leaseMs ?? this.options.leaseMs, options.signal, options.handoff);
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

  private async shutDown(): Promise<void> {
    this.held.close();
    this.waiters.rejectAll((key) => LockBackendError.shuttingDown(key));
    await this.waiters.leavesSettled();
    await this.held.drain(this.options.shutdownGraceMs);
  }

  private async closeConnections(): Promise<void> {
    await this.beforeApplicationShutdown();
    // Each holder's signal aborts here (LockLostError): whatever still runs is told before its lease can end.
    for (const lock of [...this.held.values()]) lock.stopRenewing();
    await this.waiters.leavesSettled();
    await Promise.all([this.waiters.close(), this.connection.close()]);
    this.deadlines.clear();
  }
}
