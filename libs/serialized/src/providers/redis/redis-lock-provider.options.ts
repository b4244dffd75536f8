import type { HandOffMode } from '../../acquire-options.interface';
import { validateProviderOptions } from '../../config/provider-options.validator';
import { SERIALIZED_OPTIONS_SCHEMA as S } from '../../config/serialized-options.schema';
import type { LockProviderCommonOptions } from '../../lock-provider-options.interface';
import type { RedisClientLike } from '../../peer-clients.interface';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';

/** Options of `RedisLockProvider` (flat); the module's fill them in (`redis.heartbeatMs` → `heartbeatMs`). */
export interface RedisLockProviderOptions extends LockProviderCommonOptions {
  /** `redis://` / `rediss://` URL: the library opens (lazily) and closes its own two connections. */
  url?: string;
  /** A standalone, Sentinel or Cluster client the app already has; the library never closes it. */
  client?: RedisClientLike;
  /**
   * The backend bound (default 3000 ms): a call fails with `LockBackendError` when
   * the connection is not ready within it, or when its command has waited this
   * long without a single reply arriving on the connection (a hung or cut-off
   * Redis). A command that waits behind others whose replies keep coming is not
   * failed by it: under a burst, `waitTimeoutMs` ends waits (`LockTimeoutError`).
   * Time this process was not running (a stalled or starved event loop) does not
   * count as silence.
   */
  connectTimeoutMs?: number;
  /**
   * How long a waiter keeps its place in the Redis queue without a heart-beat
   * (default 5000 ms, 100 to 600 000; module `redis.heartbeatMs`, `SERIALIZED_REDIS_HEARTBEAT_MS`). Each process beats for its waiters of a key
   * every third of it, in the same call as the safety check; a waiter whose process
   * died is passed over after this long, and a hand-off grants at most this long
   * until the new holder renews, so a waiter that died just before its turn blocks
   * the key for at most this long. A waiter whose own process stalled past it
   * keeps its place unless the key was passed on meanwhile (then it takes a new
   * one, within its `waitTimeoutMs`). Use the same value in every process.
   */
  heartbeatMs?: number;
  /**
   * Most commands on the wire at once on the command connection (per node with a
   * Cluster; default 1000, 1 to 100 000; module `redis.maxInFlight`, `SERIALIZED_REDIS_MAX_IN_FLIGHT`). More wait in this process, in order, with
   * releases, renewals, heart-beats and leaves ahead of new acquisitions; a waiter
   * that gives up while its acquisition still waits here is dropped without a round
   * trip.
   */
  maxInFlight?: number;
  /**
   * How a held key passes to this process's own next waiter (default `strict`):
   * `strict` hands it over in-process only while that waiter reached Redis before
   * every waiter of another process still queued (global arrival order holds);
   * `cohort` serves up to `maxLocalHandOffs` of this process's waiters in a row
   * first, ahead of earlier waiters of other processes (more throughput, bounded
   * unfairness). Either way the key goes back to Redis after `maxLocalHandOffs`
   * local hand-offs in a row. See docs/semantics.md, *Local hand-off*.
   */
  handoff?: HandOffMode;
  /**
   * Most local hand-offs in a row before the key goes back to Redis (default 16,
   * 0 to 1000; 0 turns local hand-off off). Each process reserves this many
   * fencing tokens plus one whenever it gets the key from Redis.
   */
  maxLocalHandOffs?: number;
  /**
   * Fail-over safety (default none; module `redis.replicas`, `SERIALIZED_REDIS_REPLICA_ACKS`,
   * `SERIALIZED_REDIS_REPLICA_TIMEOUT_MS`): a grant — the lock and the fencing tokens
   * drawn with it, a hand-off's too — counts only once Redis `WAIT` confirms that `acks`
   * replicas have it, within `timeoutMs`; otherwise the lock is released and the caller
   * gets `LockBackendError`. A renewal that is not confirmed is a failed renewal. With
   * Sentinel promoting the most up-to-date replica, a fail-over then neither grants a key
   * twice nor hands out a fencing token twice (docs/providers/redis.md, *Fail-over*).
   */
  replicas?: RedisReplicaAcks;
}

/** How many replicas must have a grant or renewal before it counts, and how long to wait for them. */
export interface RedisReplicaAcks {
  /** Replicas that must acknowledge (1 to 16; 0 turns it off). Use the number of replicas, or `min-replicas-to-write` on the servers. */
  acks: number;
  /** Longest wait for them per grant or renewal (ms, 1 to 60 000, below `connectTimeoutMs`: the wait holds the command connection). */
  timeoutMs: number;
}

/** Defaults of the Redis-only tuning knobs (from `SERIALIZED_DEFAULTS`, the one place they are written). */
export const REDIS_LOCK_DEFAULTS = {
  heartbeatMs: S.redisHeartbeatMs.default,
  maxInFlight: S.redisMaxInFlight.default,
  maxLocalHandOffs: S.redisMaxLocalHandOffs.default,
  handoff: S.redisHandoff.default,
} as const;

/** Accepted ranges of the Redis-only tuning knobs (from the options table). */
export const REDIS_LOCK_LIMITS = {
  heartbeatMs: { min: S.redisHeartbeatMs.min, max: S.redisHeartbeatMs.max },
  maxInFlight: { min: S.redisMaxInFlight.min, max: S.redisMaxInFlight.max },
  maxLocalHandOffs: { min: S.redisMaxLocalHandOffs.min, max: S.redisMaxLocalHandOffs.max },
  replicaAcks: { min: S.redisReplicaAcks.min, max: S.redisReplicaAcks.max },
  replicaTimeoutMs: { min: S.redisReplicaTimeoutMs.min, max: S.redisReplicaTimeoutMs.max },
} as const;

/** Every option with its default, validated. */
export interface ResolvedRedisLockOptions {
  readonly keyPrefix: string;
  readonly leaseMs: number;
  readonly waitTimeoutMs: number;
  readonly maxPending: number;
  readonly maxPendingTotal: number;
  readonly connectTimeoutMs: number;
  readonly shutdownGraceMs: number;
  readonly heartbeatMs: number;
  readonly maxInFlight: number;
  readonly handoff: HandOffMode;
  readonly maxLocalHandOffs: number;
  /** Replica acknowledgements a grant or renewal needs (`undefined`: none, the fast path). */
  readonly replicas: RedisReplicaAcks | undefined;
}

/**
 * Fills in the defaults, after the one check of the options (config/provider-options.validator.ts):
 * a bad value stops the constructor with a `SerializedConfigError` naming the option and what it accepts.
 */
export function resolveRedisLockOptions(options: RedisLockProviderOptions): ResolvedRedisLockOptions {
  validateProviderOptions('RedisLockProvider', options);
  const replicas = options.replicas;
  return {
    keyPrefix: options.keyPrefix ?? SERIALIZED_DEFAULTS.keyPrefix,
    leaseMs: options.leaseMs ?? SERIALIZED_DEFAULTS.leaseMs,
    waitTimeoutMs: options.waitTimeoutMs ?? SERIALIZED_DEFAULTS.waitTimeoutMs,
    maxPending: options.maxPending ?? SERIALIZED_DEFAULTS.maxPending,
    maxPendingTotal: options.maxPendingTotal ?? SERIALIZED_DEFAULTS.maxPendingTotal,
    connectTimeoutMs: options.connectTimeoutMs ?? SERIALIZED_DEFAULTS.connectTimeoutMs,
    shutdownGraceMs: options.shutdownGraceMs ?? SERIALIZED_DEFAULTS.shutdownGraceMs,
    heartbeatMs: options.heartbeatMs ?? REDIS_LOCK_DEFAULTS.heartbeatMs,
    maxInFlight: options.maxInFlight ?? REDIS_LOCK_DEFAULTS.maxInFlight,
    handoff: options.handoff ?? REDIS_LOCK_DEFAULTS.handoff,
    maxLocalHandOffs: options.maxLocalHandOffs ?? REDIS_LOCK_DEFAULTS.maxLocalHandOffs,
    replicas: replicas && replicas.acks > 0 ? { acks: replicas.acks, timeoutMs: replicas.timeoutMs } : undefined,
  };
}
