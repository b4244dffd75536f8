import type { Logger } from '@nestjs/common';
import { SERIALIZED_DEFAULTS } from '../../../serialized.defaults';
import type { Cluster } from 'ioredis';
import type { DeadlineQueue } from '../../../internal/deadline.queue';
import { EventLoopLagClock } from '../../../internal/event-loop-lag.clock';
import type { RedisCallOptions } from './redis.call';
import { RedisCallErrors } from './redis-call.errors';
import { RedisClientOwner, type RedisClient } from './redis.client';
import { RedisReadinessGate } from './redis-readiness.gate';
import { ReplyStream } from './redis-reply.stream';
import { RedisWire } from './redis.wire';

export type { RedisClient } from './redis.client';
export { LONE_RELEASE, RELEASE, URGENT, type RedisCallOptions } from './redis.call';

/** Where the provider's commands go. */
export interface RedisConnectionOptions {
  /** The library opens (lazily) and closes its own connections to this URL. */
  url?: string;
  /** A client the app already has; the library never closes it. */
  client?: RedisClient;
  /**
   * The backend bound: how long a call waits for the connection to become ready,
   * and how long a connection with calls outstanding may stay silent (no reply at
   * all) before those calls fail with `LockBackendError`.
   */
  connectTimeoutMs: number;
  /**
   * Cluster only: the hash slot a lock key's commands go to, so that each master
   * node's replies are watched on their own (a silent node is not hidden by the
   * replies of the others).
   */
  slotOf?: (key: string) => number;
  /**
   * Most commands on the wire at once per connection (per Cluster node); more wait
   * in this process, in order, urgent ones first (see {@link RedisCallOptions}).
   */
  maxInFlight?: number;
}

/** Default of {@link RedisConnectionOptions.maxInFlight} (see docs/providers/redis.md, "Tuning"). */
export const DEFAULT_MAX_IN_FLIGHT = SERIALIZED_DEFAULTS.redisMaxInFlight;

/**
 * The command connection, failing closed on an outage and never on a burst.
 *
 * The backend bound (`connectTimeoutMs`) is a bound on the connection's
 * *liveness*, not on each command's latency:
 *
 * - A command is sent only on a ready connection. While the client (re)connects,
 *   callers wait for it up to the bound ({@link RedisReadinessGate}), then fail
 *   with `LockBackendError` (nothing was sent).
 * - A sent command fails with `LockBackendError` only when it has waited the
 *   bound and no reply at all arrived on its connection meanwhile (for a Cluster,
 *   from the node it went to: one {@link ReplyStream} each). A command queued
 *   behind thousands of others whose replies keep flowing is not failed: that is
 *   overload, and the caller's own wait budget (`waitTimeoutMs`) ends such a wait.
 * - Both bounds count on an {@link EventLoopLagClock}: time this process was not
 *   running (a stalled or starved event loop) is never counted as Redis's silence.
 *
 * At most `maxInFlight` commands are on the wire per connection (per Cluster
 * node); the rest wait in order, the urgent ones (releases, renewals, heart-beats,
 * leaves) first, so a burst of acquisitions cannot delay what keeps held locks
 * and queued waiters alive.
 *
 * Connections the library opens are lazy (the app starts while Redis is down),
 * reconnect forever, and never queue or re-send commands across a disconnect:
 * a lock command replayed after an outage would take a place its caller has long
 * given up.
 */
export class RedisConnection {
  readonly client: RedisClient;
  readonly isCluster: boolean;
  readonly timeoutMs: number;
  readonly maxInFlight: number;
  readonly clock: EventLoopLagClock;
  readonly errors = new RedisCallErrors();
  private readonly owner: RedisClientOwner;
  private readonly slotOf: ((key: string) => number) | undefined;
  private readonly gate: RedisReadinessGate;
  private readonly readyListeners = new Set<() => void>();
  private readonly endListeners = new Set<() => void>();
  /** The standalone connection's reply stream, or (Cluster) one per master node. */
  private readonly stream: ReplyStream;
  private readonly nodeStreams = new Map<string, ReplyStream>();
  private warned = false;
  private readonly wire: RedisWire;
  /** Closed (`close()`): nothing is sent any more. */
  get closed(): boolean {
    // Read by reportError, which the client owner may call before the wire exists.
    return this.wire?.closed ?? false;
  }

  private readonly onReady = (): void => this.ready();
  private readonly onEnd = (): void => this.ended();
  readonly onError = (error: Error): void => this.reportError(error);

  constructor(
    options: RedisConnectionOptions,
    readonly deadlines: DeadlineQueue,
    private readonly logger: Logger,
  ) {
    this.timeoutMs = options.connectTimeoutMs;
    // Ticks while a bound may be pending: each pending bound reads it at least once per bound.
    this.clock = new EventLoopLagClock('nestjs-serialized.redis-lag', this.timeoutMs + 2000);
    this.owner = new RedisClientOwner(options, this.timeoutMs, this.onError);
    this.client = this.owner.client;
    this.isCluster = this.owner.isCluster;
    this.slotOf = this.isCluster ? options.slotOf : undefined;
    this.maxInFlight = Math.max(1, Math.floor(options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT));
    this.gate = new RedisReadinessGate(this.deadlines, this.clock, this.timeoutMs, (key) =>
      this.errors.unsent(this.errors.unreachable(key, `could not connect within ${this.timeoutMs} ms`, this.client.status)),
    );
    this.wire = new RedisWire(this.client, this.isCluster, this.deadlines, this.clock, this.errors, this.timeoutMs, this.maxInFlight);
    this.stream = new ReplyStream(this.wire);
    this.client.on('ready', this.onReady);
    this.client.on('end', this.onEnd);
  }

  /**
   * Sends a command once the connection is ready. Any failure is a
   * `LockBackendError` naming `key`: the connection did not become ready within
   * the bound, or went silent for the bound while the command waited, or the
   * command failed. Unless {@link mayHaveRun} says otherwise, the command may or
   * may not have run, so callers undo what it might have done.
   */
  run<T>(key: string, send: (client: RedisClient) => Promise<T>, options?: RedisCallOptions): Promise<T> {
    if (this.client.status === 'ready' && !this.closed) return this.streamOf(key).submit(key, send, options, this.clock.now());
    return this.afterReady(key, send, options);
  }

  /** Whether a failed call may have reached Redis (then what it did may need undoing). */
  mayHaveRun(error: unknown): boolean {
    return this.errors.mayHaveRun(error);
  }

  /**
   * Whether the connection that `key`'s commands go to is ready and has answered
   * since `since` (a `performance.now()` time): then a command sent at `since` and
   * still unanswered waits behind others, it is not cut off from Redis.
   */
  answeredSince(key: string, since: number): boolean {
    return this.client.status === 'ready' && !this.closed && this.streamOf(key).lastReplyAt >= since;
  }

  /** Calls `listener` whenever the connection becomes ready again. */
  onReconnect(listener: () => void): void {
    this.readyListeners.add(listener);
  }

  /** Calls `listener` when the client ends for good (an app's client that gave up reconnecting), not on `close()`. */
  onEnded(listener: () => void): void {
    this.endListeners.add(listener);
  }

  /** A second connection like the command one, for subscribing (always the library's own). */
  createSubscriber(): RedisClient {
    return this.owner.createSubscriber();
  }

  /** Remembers why Redis cannot be reached (for error messages) and logs it once per outage. */
  reportError(error: Error): void {
    this.errors.failing(error);
    if (this.warned || this.closed) return;
    this.warned = true;
    this.logger.warn(`Redis connection error: ${error.message} (reconnecting; lock calls fail with LockBackendError meanwhile)`);
  }

  /** Closes the connection if the library opened it; a client passed in is left open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.wire.close();
    this.gate.failAll((key) => this.errors.unsent(this.errors.closed(key)));
    this.client.off('ready', this.onReady);
    this.client.off('end', this.onEnd);
    this.readyListeners.clear();
    this.endListeners.clear();
    await this.owner.close();
    for (const stream of this.streams()) stream.close();
    this.clock.stop();
  }

  /** Waits for the connection (see {@link RedisReadinessGate}), then sends. */
  private afterReady<T>(key: string, send: (client: RedisClient) => Promise<T>, options: RedisCallOptions | undefined): Promise<T> {
    if (this.closed || this.client.status === 'end') return Promise.reject(this.errors.unsent(this.errors.closed(key)));
    const started = this.clock.now();
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    return this.gate.wait(key).then(() => {
      // The bound counts from the call, but leaves at least one round trip on the fresh connection.
      const since = Math.max(started, this.clock.now() - this.timeoutMs + Math.min(250, this.timeoutMs));
      return this.streamOf(key).submit(key, send, options, since);
    });
  }

  private streamOf(key: string): ReplyStream {
    if (!this.slotOf) return this.stream;
    const node = (this.client as Cluster).slots?.[this.slotOf(key)]?.[0];
    if (node === undefined) return this.stream;
    let stream = this.nodeStreams.get(node);
    if (!stream) {
      stream = new ReplyStream(this.wire);
      stream.heardAs(this.stream);
      this.nodeStreams.set(node, stream);
    }
    return stream;
  }

  private *streams(): Iterable<ReplyStream> {
    yield this.stream;
    yield* this.nodeStreams.values();
  }

  private ready(): void {
    this.warned = false;
    this.errors.recovered();
    // The connection just answered its ready check.
    for (const stream of this.streams()) stream.heard();
    this.gate.open();
    notify(this.readyListeners);
  }

  private ended(): void {
    this.gate.failAll((key) => this.errors.unsent(this.errors.closed(key)));
    notify(this.endListeners);
  }
}

function notify(listeners: Iterable<() => void>): void {
  for (const listener of listeners) {
    try {
      listener();
    } catch {
      // A listener only schedules work; it has no one to report to.
    }
  }
}
