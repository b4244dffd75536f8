import { Logger, type BeforeApplicationShutdown, type OnApplicationShutdown } from '@nestjs/common';
import { LockBackendError } from '../../errors';
import { DeadlineQueue } from '../../internal/deadline.queue';
import { EventLoopStallMonitor } from '../../internal/event-loop-stall.monitor';
import { LayeredLockProvider } from '../../local/layered-lock.provider';
import { LockLines } from '../../local/lock.lines';
import type { IdempotencyStore, IdempotencyStoreSource } from '../../idempotency/idempotency.store';
import { RedisIdempotencyStore } from '../../idempotency/stores/redis-idempotency.store';
import { redisProviderOptions } from '../../config/provider-options.mapper';
import type { ResolvedSerializedOptions } from '../../serialized-options.interface';
import { SERIALIZED_LOGGER_CONTEXT } from '../../serialized.constants';
import { OwnerTokens } from './protocol/owner.tokens';
import { RedisClientOwner, type RedisClient } from './transport/redis.client';
import { RedisConnection, URGENT } from './transport/redis.connection';
import { ReplicaAcks } from './transport/replica.acks';
import { RedisKeyspace, type RedisLockKeys } from './protocol/redis.keyspace';
import type { RedisLock } from './holding/redis.lock';
import { resolveRedisLockOptions, type RedisLockProviderOptions, type ResolvedRedisLockOptions } from './redis-lock-provider.options';
import { RedisScripts } from './protocol/redis.scripts';
import { withTimeout } from '../../observability/with.timeout';
import { RedisBackend } from './redis.backend';
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
 * The rooms (docs/architecture.md, *The Redis provider*): the local layer
 * (`LockLines`: admission, budgets, aborts, holders, shutdown) over
 * {@link RedisBackend} (every waiter's Redis transition, tries, heart-beats,
 * leaves, releases), transport/ (the connection, its client, readiness gate and
 * reply streams), protocol/ (keys, tokens, one typed gateway per Lua script, the
 * commands and channel messages), waiting/ (a waiter's state, the wake-up
 * channel), holding/ (`RedisLock`, a held key) and local-handoff/ (the tenure
 * registry, riders: decisions only).
 *
 * After every lock is released, nothing is left in Redis but the fencing counter
 * (one per prefix; with Cluster, one per hash slot in use). See docs/providers/redis.md.
 */
export class RedisLockProvider
  extends LayeredLockProvider
  implements BeforeApplicationShutdown, OnApplicationShutdown, IdempotencyStoreSource
{
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);
  private readonly deadlines = new DeadlineQueue({ unref: true, name: 'nestjs-serialized.redis-deadlines' });
  private readonly options: ResolvedRedisLockOptions;
  private readonly connection: RedisConnection;
  private readonly keyspace: RedisKeyspace;
  private readonly backend: RedisBackend;
  /** The local layer: callers, admission, budgets, holders and shutdown (Redis grants nothing synchronously). @internal */
  readonly lines: LockLines<RedisLock>;
  /** `LockService.inspect`: one read-only script and this process's own holders and waiters (typed by its interface). @internal */
  readonly inspector: KeyInspector;

  constructor(options: RedisLockProviderOptions) {
    super('RedisLockProvider');
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
    this.backend = new RedisBackend(
      {
        connection: this.connection,
        scripts,
        keyspace,
        tokens,
        deadlines: this.deadlines,
        stalls,
        heartbeatMs,
        leaseMs: this.options.leaseMs,
        logger: this.logger,
        handoff: this.options.handoff,
        maxLocalHandOffs: this.options.maxLocalHandOffs,
        replicas:
          this.options.replicas &&
          new ReplicaAcks(
            this.options.replicas.acks,
            this.options.replicas.timeoutMs,
            keyspace.isCluster ? (key) => keyspace.slotOf(key) : undefined,
          ),
      },
      () => this.lines,
    );
    this.lines = new LockLines<RedisLock>(this.backend, {
      name: 'RedisLockProvider',
      waitTimeoutMs: this.options.waitTimeoutMs,
      maxPending: this.options.maxPending,
      maxPendingTotal: this.options.maxPendingTotal,
      shutdownGraceMs: this.options.shutdownGraceMs,
      deadlines: this.deadlines,
      // Visited at a reconnect, when the connection ends, and past the grace period.
      trackHeld: true,
    });
    this.inspector = new RedisLockInspector({ connection: this.connection, keyspace, session: tokens.session, lines: this.lines });
    this.connection.onReconnect(() => {
      this.backend.resync();
      // Redis may have lost its data (a restart without persistence, a fail-over):
      // every held lock asks now (owner-checked), so a lost one aborts its signal at once.
      for (const lock of this.lines.holders()) lock.recheck();
    });
    this.connection.onEnded(() => {
      // An app's client that gave up for good: no lock can be renewed.
      for (const lock of this.lines.holders()) lock.abandon('the Redis connection ended, so its lease can no longer be renewed');
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
    if (this.lines.closing) return Promise.reject(LockBackendError.shuttingDown());
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
    return this.backend.size;
  }

  /**
   * Diagnostics: how many times a released key went straight to a waiter of this
   * process, in-process (local hand-off, no Redis round trip), since the start.
   */
  get localHandOffs(): number {
    return this.backend.tenures.handOffs;
  }

  /** Diagnostics: locks held through this provider right now. */
  get heldLocks(): number {
    return this.lines.heldCount;
  }

  /** The heart-beat timeout in use (validated; see {@link RedisLockProviderOptions.heartbeatMs}). */
  get heartbeatMs(): number {
    return this.options.heartbeatMs;
  }

  /** The drain, once every leave of a given-up place has reached Redis. */
  protected override async drain(): Promise<void> {
    // Waiters and newcomers are refused at once (their places given up), then holders get the grace period.
    const drained = this.lines.stopTaking();
    await this.backend.leavesSettled();
    await drained;
  }

  /** Renewals stop, then the library's own connections close (a client passed in stays open). */
  protected async closeBackend(): Promise<void> {
    // Each holder's signal aborts here (LockLostError): whatever still runs is told before its lease can end.
    for (const lock of [...this.lines.holders()]) lock.stopRenewing();
    await this.backend.leavesSettled();
    await Promise.all([this.backend.close(), this.connection.close()]);
    this.deadlines.clear();
  }
}
