import { AsyncResource } from 'node:async_hooks';
import { SERIALIZED_DEFAULTS } from '../../serialized.defaults';
import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { SerializedConfigError } from '../../config/serialized-config.error';
import { LockBackendError } from '../../errors';
import type { Deadline, DeadlineQueue } from '../../internal/deadline-queue';
import { CallQueue } from './redis-call-queue';
import { closeClient } from './redis-close-client';
import { loadIoredis } from './redis-driver';

/** A standalone, Sentinel or Cluster client. */
export type RedisClient = Redis | Cluster;

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
   * in this process, in order, urgent ones first (see {@link RunOptions}).
   */
  maxInFlight?: number;
}

/** How one command is sent. */
export interface RunOptions {
  /**
   * Sent ahead of the other commands waiting in this process (never ahead of what
   * is already on the wire): releases, renewals, heart-beats and leaves, which keep
   * locks and places alive and free keys, go before new acquisitions.
   */
  readonly urgent?: boolean;
  /**
   * Asked just before the command would be sent: `true` drops it unsent (its
   * caller gave up meanwhile); the call then fails with an error for which
   * {@link RedisConnection.mayHaveRun} is `false`.
   */
  skip?(): boolean;
}

/** Commands on the wire from which writes are batched per turn of the event loop (measured: see docs). */
const CORK_AT = 128;

/** Options of the commands that keep locks and places alive or free keys. */
export const URGENT: RunOptions = { urgent: true };

/**
 * Longest pause between reconnection attempts of the connections the library
 * opens: held locks are re-checked as soon as the connection is back, so a lock
 * that Redis lost is known lost within about this long of Redis answering again.
 */
const RECONNECT_MAX_DELAY_MS = 1000;

/** Default of {@link RedisConnectionOptions.maxInFlight} (see docs/providers/redis.md, "Tuning"). */
export const DEFAULT_MAX_IN_FLIGHT = SERIALIZED_DEFAULTS.redisMaxInFlight;

/** A call waiting for the connection to become ready. */
interface ReadyWaiter {
  readonly key: string;
  /** From when its bound counts: the first turn of the event loop after the call (`Infinity` until then). */
  since: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** A command whose caller waits: queued in this process, or on the wire. */
interface Call {
  readonly key: string;
  /** From when its silence bound counts (when it was asked for, or the connection became ready). */
  readonly since: number;
  /** Sends it; dropped once sent. */
  send: ((client: RedisClient) => Promise<unknown>) | undefined;
  /** Asked just before it is sent (see {@link RunOptions.skip}). */
  readonly options: RunOptions | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  /** Its caller has its answer (the reply, or a failure). */
  done: boolean;
}

/**
 * One stream of replies: the standalone (or Sentinel) connection, or one Cluster
 * master. Redis answers the commands of one connection in order, so a reply to any
 * of them proves that the connection, and the server behind it, still move.
 */
class ReplyStream {
  /** Calls whose caller waits (queued here or on the wire), oldest first. */
  readonly calls = new Set<Call>();
  /** Commands on the wire, including those whose caller no longer waits. */
  inFlight = 0;
  readonly urgent = new CallQueue<Call>();
  readonly normal = new CallQueue<Call>();
  /** When a reply (or the connection becoming ready) was last heard of. */
  lastReplyAt = -Infinity;
  /** The next look at whether the stream went silent. */
  watch: Deadline | undefined;
  /** A silence is being confirmed after I/O had its turn. */
  confirming = false;
  readonly onWatch: () => void;

  constructor(onWatch: (stream: ReplyStream) => void) {
    this.onWatch = () => {
      this.watch = undefined;
      onWatch(this);
    };
  }

  get oldest(): Call | undefined {
    return this.calls.size === 0 ? undefined : this.calls.values().next().value;
  }
}

/**
 * The command connection, failing closed on an outage and never on a burst.
 *
 * The backend bound (`connectTimeoutMs`) is a bound on the connection's
 * *liveness*, not on each command's latency:
 *
 * - A command is sent only on a ready connection. While the client (re)connects,
 *   callers wait for it up to the bound, then fail with `LockBackendError`
 *   (nothing was sent).
 * - A sent command fails with `LockBackendError` only when it has waited the
 *   bound and no reply at all arrived on its connection meanwhile (for a Cluster,
 *   from the node it went to). A command queued behind thousands of others whose
 *   replies keep flowing is not failed: that is overload, and the caller's own
 *   wait budget (`waitTimeoutMs`, `LockTimeoutError`) is what ends such a wait.
 *
 * One lazily re-armed deadline per reply stream watches the silence, so commands
 * cost no timer each. A deadline found overdue is confirmed after the event loop
 * has read its sockets once more: after a stalled loop (a synchronous burst of
 * thousands of calls, a long GC pause) the replies may already wait unread. The
 * same holds for the wait for readiness, which counts from the later of the call
 * and the socket connecting.
 *
 * At most `maxInFlight` commands are on the wire per connection (per Cluster
 * node); the rest wait here in order, the urgent ones (releases, renewals,
 * heart-beats, leaves) first. So a burst of acquisitions cannot delay the
 * renewals and heart-beats that keep held locks and queued waiters alive, and an
 * acquisition whose caller gave up before it was sent is dropped without a round
 * trip. Commands waiting here count towards the silence bound like those on the
 * wire (they fail, unsent, when the connection is silent). While many commands
 * are on the wire, the writes of one turn of the event loop leave in one system
 * call.
 *
 * Connections the library opens are lazy (the app starts while Redis is down),
 * reconnect forever, and never queue or re-send commands across a disconnect:
 * a lock command replayed after an outage would take a place its caller has long
 * given up.
 */
export class RedisConnection {
  readonly client: RedisClient;
  readonly isCluster: boolean;
  private readonly ownsClient: boolean;
  private readonly url: string | undefined;
  private readonly timeoutMs: number;
  private readonly slotOf: ((key: string) => number) | undefined;
  private readonly maxInFlight: number;
  /** Calls waiting for the connection, oldest first. */
  private readonly readyWaiters = new Set<ReadyWaiter>();
  /** The next look at whether those waited too long; one for all of them. */
  private readyWatch: Deadline | undefined;
  private readyConfirming = false;
  /** Waiters whose bound starts at the next turn of the event loop. */
  private readonly unstamped: ReadyWaiter[] = [];
  private readonly readyListeners = new Set<() => void>();
  private readonly endListeners = new Set<() => void>();
  /** The standalone connection's reply stream, or (Cluster) one per master node. */
  private readonly stream: ReplyStream;
  private readonly nodeStreams = new Map<string, ReplyStream>();
  /** Failures of calls that never left this process (nothing to undo in Redis). */
  private readonly unsent = new WeakSet<Error>();
  private lastError: Error | undefined;
  private warned = false;
  private closed = false;
  private corked = false;
  private readonly onReady = (): void => this.ready();
  private readonly onStamp = (): void => this.stamp();
  // The stamping turn is scheduled here, not in the request that happened to wait first.
  private readonly scope = new AsyncResource('nestjs-serialized.redis-connection');
  private readonly onReadyWatch = (): void => this.readyWatched();
  private readonly onEnd = (): void => this.ended();
  private readonly onWatch = (stream: ReplyStream): void => this.watched(stream);
  readonly onError = (error: Error): void => this.reportError(error);

  constructor(
    options: RedisConnectionOptions,
    private readonly deadlines: DeadlineQueue,
    private readonly logger: Logger,
  ) {
    this.timeoutMs = options.connectTimeoutMs;
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.url) {
      this.url = options.url;
      this.client = this.open();
      this.ownsClient = true;
    } else {
      throw new SerializedConfigError(["driver 'redis' needs redis.url (or REDIS_URL) or redis.client"]);
    }
    this.isCluster = (this.client as { isCluster?: boolean }).isCluster === true;
    this.slotOf = this.isCluster ? options.slotOf : undefined;
    this.maxInFlight = Math.max(1, Math.floor(options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT));
    this.stream = new ReplyStream(this.onWatch);
    this.client.on('ready', this.onReady);
    this.client.on('end', this.onEnd);
  }

  /**
   * Sends a command once the connection is ready. Any failure is a
   * `LockBackendError` naming `key`: the connection did not become ready within
   * the bound, or went silent for the bound while the command waited (see the
   * class comment), or the command failed. Unless {@link mayHaveRun} says
   * otherwise, the command may or may not have run, so callers undo what it
   * might have done.
   */
  run<T>(key: string, send: (client: RedisClient) => Promise<T>, options?: RunOptions): Promise<T> {
    if (this.client.status === 'ready' && !this.closed) return this.submit(key, send, options, performance.now());
    return this.afterReady(key, send, options);
  }

  /** Whether a failed call may have reached Redis (then what it did may need undoing). */
  mayHaveRun(error: unknown): boolean {
    return !(error instanceof Error && this.unsent.has(error));
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
    let subscriber: RedisClient;
    if (this.url) subscriber = this.open();
    else if (this.isCluster) subscriber = (this.client as Cluster).duplicate();
    else subscriber = (this.client as Redis).duplicate({ lazyConnect: true });
    subscriber.on('error', this.onError);
    return subscriber;
  }

  /** Remembers why Redis cannot be reached (for error messages) and logs it once per outage. */
  reportError(error: Error): void {
    this.lastError = error;
    if (this.warned || this.closed) return;
    this.warned = true;
    this.logger.warn(`Redis connection error: ${error.message} (reconnecting; lock calls fail with LockBackendError meanwhile)`);
  }

  /** Closes the connection if the library opened it; a client passed in is left open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.failReadyWaiters(Infinity, (waiter) => this.closedError(waiter.key));
    this.client.off('ready', this.onReady);
    this.client.off('end', this.onEnd);
    this.readyListeners.clear();
    this.endListeners.clear();
    if (this.ownsClient) await closeClient(this.client);
    // Replies that never came will not come now; queued calls are never sent.
    for (const stream of this.streams()) {
      stream.urgent.clear();
      stream.normal.clear();
      for (const call of stream.calls) {
        const error = this.closedError(call.key);
        this.finish(stream, call, call.send ? this.unsentError(error) : error);
      }
      if (stream.watch) this.deadlines.cancel(stream.watch);
      stream.watch = undefined;
    }
  }

  private open(): Redis {
    const { Redis } = loadIoredis();
    const options: RedisOptions = {
      lazyConnect: true,
      connectTimeout: this.timeoutMs,
      // Fail in-flight commands on a disconnect instead of replaying them later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_MAX_DELAY_MS),
    };
    const client = new Redis(this.url!, options);
    client.on('error', this.onError);
    return client;
  }

  /** Sends the call now if its connection has room on the wire, otherwise queues it; its silence bound counts from `since`. */
  private submit<T>(key: string, send: (client: RedisClient) => Promise<T>, options: RunOptions | undefined, since: number): Promise<T> {
    const stream = this.streamOf(key);
    return new Promise<T>((resolve, reject) => {
      const call: Call = { key, since, send, options, resolve: resolve as (value: unknown) => void, reject, done: false };
      stream.calls.add(call);
      if (!stream.watch && !stream.confirming) this.watch(stream, since + this.timeoutMs);
      if (stream.inFlight >= this.maxInFlight) {
        (options?.urgent ? stream.urgent : stream.normal).push(call);
      } else if (stream.urgent.size === 0 && stream.normal.size === 0) {
        this.dispatch(stream, call);
      } else {
        (options?.urgent ? stream.urgent : stream.normal).push(call);
        this.pump(stream);
      }
    });
  }

  /** Puts one call on the wire. */
  private dispatch(stream: ReplyStream, call: Call): void {
    const send = call.send!;
    call.send = undefined;
    if (call.options?.skip?.()) {
      this.finish(stream, call, this.unsentError(new LockBackendError('The caller gave up before the command was sent', { key: call.key })));
      return;
    }
    // Never hand a command to a client that is not connected: it would queue it
    // and send it after a reconnect, long after its caller was told it failed.
    if (this.client.status !== 'ready' || this.closed) {
      const error = this.closed ? this.closedError(call.key) : this.unreachable(call.key, 'the connection was lost before the command was sent');
      this.finish(stream, call, this.unsentError(error));
      return;
    }
    // Many commands on the wire: Redis is busy anyway, so the write can wait for the rest of this turn.
    if (stream.inFlight >= CORK_AT) this.cork();
    let reply: Promise<unknown>;
    try {
      reply = send(this.client);
    } catch (error) {
      this.finish(stream, call, this.failed(call.key, error));
      return;
    }
    stream.inFlight++;
    reply.then(
      (value) => {
        stream.inFlight--;
        stream.lastReplyAt = performance.now();
        if (!call.done) {
          call.done = true;
          stream.calls.delete(call);
          call.resolve(value);
        }
        if (stream.inFlight < this.maxInFlight) this.pump(stream);
      },
      (error: unknown) => {
        stream.inFlight--;
        // An error reply is a reply; a connection that dropped the command is not.
        if (isReplyError(error)) stream.lastReplyAt = performance.now();
        this.finish(stream, call, this.failed(call.key, error));
        if (stream.inFlight < this.maxInFlight) this.pump(stream);
      },
    );
  }

  /**
   * Holds the socket's writes until the current burst of JavaScript is over, so
   * that the commands sent in it leave in one write instead of one system call
   * each (standalone and Sentinel connections).
   */
  private cork(): void {
    if (this.corked || this.isCluster) return;
    const socket = (this.client as Redis).stream as { cork?: () => void; uncork?: () => void } | undefined;
    if (!socket?.cork || !socket.uncork) return;
    this.corked = true;
    socket.cork();
    process.nextTick(() => {
      this.corked = false;
      socket.uncork!();
    });
  }

  /** Sends queued calls, urgent ones first, while the wire has room. */
  private pump(stream: ReplyStream): void {
    while (stream.inFlight < this.maxInFlight) {
      const call = stream.urgent.shift() ?? stream.normal.shift();
      if (!call) return;
      if (!call.done) this.dispatch(stream, call);
    }
  }

  /** Gives the call's caller its failure (once). */
  private finish(stream: ReplyStream, call: Call, error: Error): void {
    if (call.done) return;
    call.done = true;
    stream.calls.delete(call);
    call.reject(error);
  }

  private watch(stream: ReplyStream, at: number): void {
    stream.watch = this.deadlines.schedule(Math.max(0, at - performance.now()), stream.onWatch);
  }

  /** The stream's deadline: nothing to do, a later look, or a silence to confirm. */
  private watched(stream: ReplyStream): void {
    const due = this.silenceEnds(stream);
    if (due === undefined) return;
    if (due > performance.now() + 1) {
      this.watch(stream, due);
      return;
    }
    if (stream.confirming) return;
    // Timers run before I/O in a loop turn: after a stalled event loop the replies
    // may already wait in the socket. Look again once I/O had its turn.
    stream.confirming = true;
    setImmediate(() => {
      stream.confirming = false;
      this.expire(stream);
    });
  }

  /** Fails the calls that waited the whole bound without a single reply on their stream. */
  private expire(stream: ReplyStream): void {
    if (this.closed) return;
    const now = performance.now();
    if (now - stream.lastReplyAt >= this.timeoutMs) {
      const cutoff = now - this.timeoutMs;
      for (const call of stream.calls) {
        if (call.since > cutoff) break;
        const error = this.unreachable(call.key, `no reply from Redis for ${this.timeoutMs} ms`);
        // One still queued here was never sent: nothing to undo.
        this.finish(stream, call, call.send ? this.unsentError(error) : error);
      }
    }
    const due = this.silenceEnds(stream);
    if (due !== undefined && !stream.watch) this.watch(stream, due);
  }

  /** When the oldest waiting call will have waited the bound in silence; `undefined` when none waits. */
  private silenceEnds(stream: ReplyStream): number | undefined {
    const oldest = stream.oldest;
    if (!oldest) return undefined;
    return Math.max(oldest.since, stream.lastReplyAt) + this.timeoutMs;
  }

  private streamOf(key: string): ReplyStream {
    if (!this.slotOf) return this.stream;
    const node = (this.client as Cluster).slots?.[this.slotOf(key)]?.[0];
    if (node === undefined) return this.stream;
    let stream = this.nodeStreams.get(node);
    if (!stream) {
      stream = new ReplyStream(this.onWatch);
      stream.lastReplyAt = this.stream.lastReplyAt;
      this.nodeStreams.set(node, stream);
    }
    return stream;
  }

  private *streams(): Iterable<ReplyStream> {
    yield this.stream;
    yield* this.nodeStreams.values();
  }

  /**
   * Waits for the connection, then sends. A call fails (nothing sent) once it has
   * waited the bound for a ready connection: a refused or unroutable Redis never
   * connects, a hung one never answers the ready check, one that refuses the
   * client (authentication, too many clients) keeps failing it.
   *
   * The bound counts from the first turn of the event loop after the call, not
   * from the call itself: a synchronous burst of thousands of calls (the first of
   * which opens the lazy connection) can hold the loop for longer than the bound,
   * and the connection cannot make any progress before the loop turns.
   */
  private afterReady<T>(key: string, send: (client: RedisClient) => Promise<T>, options: RunOptions | undefined): Promise<T> {
    if (this.closed || this.client.status === 'end') return Promise.reject(this.unsentError(this.closedError(key)));
    const started = performance.now();
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    return new Promise<void>((resolve, reject) => {
      const waiter: ReadyWaiter = { key, since: Infinity, resolve, reject };
      this.readyWaiters.add(waiter);
      if (this.unstamped.push(waiter) === 1) this.scope.runInAsyncScope(() => setImmediate(this.onStamp));
    }).then(() => {
      // The bound counts from the call, but leaves at least one round trip on the fresh connection.
      const since = Math.max(started, performance.now() - this.timeoutMs + Math.min(250, this.timeoutMs));
      return this.submit(key, send, options, since);
    });
  }

  private watchReady(at: number): void {
    this.readyWatch = this.deadlines.schedule(Math.max(0, at - performance.now()), this.onReadyWatch);
  }

  /** Starts the bound of the waiters that arrived since the last turn of the event loop. */
  private stamp(): void {
    const now = performance.now();
    for (const waiter of this.unstamped) waiter.since = now;
    this.unstamped.length = 0;
    const due = this.readyEnds();
    if (due !== undefined && !this.readyWatch && !this.readyConfirming) this.watchReady(due);
  }

  /** When the oldest waiter will have waited the bound; `undefined` when none waits (or none is stamped yet). */
  private readyEnds(): number | undefined {
    if (this.readyWaiters.size === 0) return undefined;
    const oldest = this.readyWaiters.values().next().value!;
    return Number.isFinite(oldest.since) ? oldest.since + this.timeoutMs : undefined;
  }

  private readyWatched(): void {
    this.readyWatch = undefined;
    const due = this.readyEnds();
    if (due === undefined) return;
    if (due > performance.now() + 1) {
      this.watchReady(due);
      return;
    }
    if (this.readyConfirming) return;
    // As for replies: after a stalled event loop (say, a synchronous burst of
    // thousands of calls that started the connection), the connect may wait unread.
    this.readyConfirming = true;
    setImmediate(() => {
      this.readyConfirming = false;
      if (this.closed) return;
      const cutoff = performance.now() - this.timeoutMs;
      this.failReadyWaiters(cutoff, (waiter) => this.unreachable(waiter.key, `could not connect within ${this.timeoutMs} ms`));
      const next = this.readyEnds();
      if (next !== undefined && !this.readyWatch) this.watchReady(next);
    });
  }

  /** Fails (as never sent) the calls waiting for the connection since `cutoff` or longer. */
  private failReadyWaiters(cutoff: number, error: (waiter: ReadyWaiter) => Error): void {
    for (const waiter of this.readyWaiters) {
      if (waiter.since > cutoff) break;
      this.readyWaiters.delete(waiter);
      waiter.reject(this.unsentError(error(waiter)));
    }
    if (this.readyWaiters.size === 0 && this.readyWatch) {
      this.deadlines.cancel(this.readyWatch);
      this.readyWatch = undefined;
    }
  }

  private ready(): void {
    this.warned = false;
    this.lastError = undefined;
    // The connection just answered its ready check.
    const now = performance.now();
    for (const stream of this.streams()) stream.lastReplyAt = now;
    const waiters = [...this.readyWaiters];
    this.readyWaiters.clear();
    if (this.readyWatch) this.deadlines.cancel(this.readyWatch);
    this.readyWatch = undefined;
    for (const waiter of waiters) waiter.resolve();
    notify(this.readyListeners);
  }

  private ended(): void {
    this.failReadyWaiters(Infinity, (waiter) => this.closedError(waiter.key));
    notify(this.endListeners);
  }

  private unreachable(key: string, what: string): LockBackendError {
    const why = this.lastError ? ` (last error: ${this.lastError.message})` : '';
    return new LockBackendError(`Redis is unreachable: ${what}${why}`, { key, cause: this.lastError });
  }

  private failed(key: string, error: unknown): LockBackendError {
    if (error instanceof LockBackendError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new LockBackendError(`Redis command failed: ${message}`, { key, cause: error });
  }

  private unsentError<E extends Error>(error: E): E {
    this.unsent.add(error);
    return error;
  }

  private closedError(key: string): LockBackendError {
    return new LockBackendError('The Redis connection is closed', { key });
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

/** A reply Redis sent (`-ERR ...`, `NOSCRIPT ...`), as opposed to a command the client dropped. */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}
