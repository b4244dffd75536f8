import { performance } from 'node:perf_hooks';
import type { Call, RedisCallOptions } from './redis.call';
import { CallQueue } from './redis-call.queue';
import type { RedisClient } from './redis.client';
import type { RedisWire } from './redis.wire';
import { SilenceWatch } from './silence.watch';

/** Commands on the wire from which writes are batched per turn of the event loop (measured: see docs). */
const CORK_AT = 128;

/** What a reply stream needs from its connection. */

/**
 * One stream of replies: the standalone (or Sentinel) connection, or one Cluster
 * master. Redis answers the commands of one connection in order, so a reply to any
 * of them proves that the connection, and the server behind it, still move.
 *
 * It keeps at most `maxInFlight` commands on the wire; the rest wait here in
 * order, urgent ones first. One lazily re-armed deadline watches its silence: the
 * calls that waited the whole bound without a single reply fail. Silence is
 * counted on the lag-free clock, so time this process was not running (a stalled
 * or starved event loop) is not silence; and a deadline found overdue is
 * confirmed once more after I/O had its turn, since the replies may wait unread.
 */
export class ReplyStream {
  /** Calls whose caller waits (queued here or on the wire), oldest first. */
  private readonly calls = new Set<Call>();
  /** Commands on the wire, including those whose caller no longer waits. */
  private inFlight = 0;
  private readonly urgent = new CallQueue<Call>();
  private readonly normal = new CallQueue<Call>();
  /** When a reply (or the connection becoming ready) was last heard of: `performance.now()`. */
  lastReplyAt = -Infinity;
  /** The same moment on the lag-free clock. */
  private lastReplyLive = -Infinity;
  /** Whether the stream went silent. */
  private readonly watch: SilenceWatch;

  constructor(private readonly host: RedisWire) {
    this.watch = new SilenceWatch(
      host.deadlines,
      host.clock,
      () => this.silenceEnds(),
      () => this.expire(),
    );
  }

  /** The stream answered (a reply, or the connection's ready check). */
  heard(): void {
    this.lastReplyAt = performance.now();
    this.lastReplyLive = this.host.clock.now();
  }

  /** Starts from what another stream last heard (a Cluster node's stream made later). */
  heardAs(other: ReplyStream): void {
    this.lastReplyAt = other.lastReplyAt;
    this.lastReplyLive = other.lastReplyLive;
  }

  /** Sends the call now if the wire has room, otherwise queues it; its silence bound counts from `since` (lag-free clock). */
  submit<T>(key: string, send: (client: RedisClient) => Promise<T>, options: RedisCallOptions | undefined, since: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call: Call = { key, since, send, options, resolve: resolve as (value: unknown) => void, reject, done: false };
      this.calls.add(call);
      this.watch.arm(since + this.host.timeoutMs);
      if (this.inFlight >= this.host.maxInFlight) {
        (options?.urgent ? this.urgent : this.normal).push(call);
      } else if (this.urgent.size === 0 && this.normal.size === 0) {
        this.dispatch(call);
      } else {
        (options?.urgent ? this.urgent : this.normal).push(call);
        this.pump();
      }
    });
  }

  /** The connection closed: queued calls are never sent, replies that never came will not come now. */
  close(): void {
    this.urgent.clear();
    this.normal.clear();
    for (const call of this.calls) {
      const error = this.host.errors.closed(call.key);
      this.finish(call, call.send ? this.host.errors.unsent(error) : error);
    }
    this.watch.cancel();
  }

  /** Puts one call on the wire. */
  private dispatch(call: Call): void {
    const { errors } = this.host;
    const send = call.send!;
    call.send = undefined;
    if (call.options?.skip?.()) {
      this.finish(call, errors.unsent(errors.gaveUp(call.key)));
      return;
    }
    // Never hand a command to a client that is not connected: it would queue it
    // and send it after a reconnect, long after its caller was told it failed.
    const client = this.host.sendable(call.key);
    if (client instanceof Error) {
      this.finish(call, errors.unsent(client));
      return;
    }
    // A release that may share its write waits for the end of this turn or event-loop iteration:
    // the caller's next acquisition, or those of the other requests read in the same iteration,
    // share its system call (a write that wakes Redis costs tens of µs of CPU on the sending side;
    // docs/BENCHMARKS.md). Many commands on the wire: Redis is busy anyway, so the write can wait
    // for the rest of this turn.
    if (call.options?.sharesWrite) this.host.cork(call.options.sharesWrite);
    else if (this.inFlight >= CORK_AT) this.host.cork('turn');
    let reply: Promise<unknown>;
    try {
      reply = send(client);
    } catch (error) {
      this.finish(call, errors.failed(call.key, error));
      return;
    }
    this.inFlight++;
    reply.then(
      (value) => {
        this.inFlight--;
        this.heard();
        if (!call.done) {
          call.done = true;
          this.calls.delete(call);
          call.resolve(value);
        }
        if (this.inFlight < this.host.maxInFlight) this.pump();
      },
      (error: unknown) => {
        this.inFlight--;
        // An error reply is a reply; a connection that dropped the command is not.
        if (isReplyError(error)) this.heard();
        this.finish(call, errors.failed(call.key, error));
        if (this.inFlight < this.host.maxInFlight) this.pump();
      },
    );
  }

  /** Sends queued calls, urgent ones first, while the wire has room. */
  private pump(): void {
    while (this.inFlight < this.host.maxInFlight) {
      const call = this.urgent.shift() ?? this.normal.shift();
      if (!call) return;
      if (!call.done) this.dispatch(call);
    }
  }

  /** Gives the call's caller its failure (once). */
  private finish(call: Call, error: Error): void {
    if (call.done) return;
    call.done = true;
    this.calls.delete(call);
    call.reject(error);
  }

  /** Fails the calls that waited the whole bound without a single reply on this stream. */
  private expire(): void {
    const { host } = this;
    if (host.closed) return;
    const now = host.clock.now();
    if (now - this.lastReplyLive >= host.timeoutMs) {
      const cutoff = now - host.timeoutMs;
      for (const call of this.calls) {
        if (call.since > cutoff) break;
        const error = host.errors.unreachable(call.key, `no reply from Redis for ${host.timeoutMs} ms`);
        // One still queued here was never sent: nothing to undo.
        this.finish(call, call.send ? host.errors.unsent(error) : error);
      }
    }
  }

  /** When the oldest waiting call will have waited the bound in silence; `undefined` when none waits (or the stream closed). */
  private silenceEnds(): number | undefined {
    // A closed stream answers nothing more: its watch stops.
    if (this.host.closed || this.calls.size === 0) return undefined;
    const oldest = this.calls.values().next().value!;
    return Math.max(oldest.since, this.lastReplyLive) + this.host.timeoutMs;
  }
}

/** A reply Redis sent (`-ERR ...`, `NOSCRIPT ...`), as opposed to a command the client dropped. */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}
