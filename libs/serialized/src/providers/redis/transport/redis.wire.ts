import type { Redis } from 'ioredis';
import type { DeadlineQueue } from '../../../internal/deadline.queue';
import type { EventLoopLagClock } from '../../../internal/event-loop-lag.clock';
import type { RedisCallErrors } from './redis-call.errors';
import type { RedisClient } from './redis.client';

/**
 * The command client as the reply streams send on it: whether a command may be
 * handed to it now, the bounds, and the cork that lets a burst leave in one write.
 * The connection owns it and marks it closed; the streams only read it.
 */
export class RedisWire {
  private isClosed = false;
  private corked = false;

  constructor(
    readonly client: RedisClient,
    readonly isCluster: boolean,
    readonly deadlines: DeadlineQueue,
    /** The lag-free clock silence is measured on. */
    readonly clock: EventLoopLagClock,
    readonly errors: RedisCallErrors,
    /** The backend bound: how long calls may wait without a single reply. */
    readonly timeoutMs: number,
    /** Most commands on the wire at once. */
    readonly maxInFlight: number,
  ) {}

  /** The connection was closed: nothing is sent any more. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** `close`: the connection closes; nothing is sent from now on. */
  close(): void {
    this.isClosed = true;
  }

  /** The client when a command may be handed to it now, otherwise why it may not. */
  sendable(key: string): RedisClient | Error {
    if (this.closed) return this.errors.closed(key);
    if (this.client.status !== 'ready') return this.errors.unreachable(key, 'the connection was lost before the command was sent');
    return this.client;
  }

  /**
   * Holds the socket's writes so that the commands sent meanwhile leave in one
   * write instead of one system call each (standalone and Sentinel connections):
   * until the current burst of JavaScript is over (`'turn'`), or until the end of
   * this event-loop iteration (`'iteration'`, its check phase), so that the other
   * callbacks of the iteration (the next requests read from their sockets) add
   * their commands too. Order on the connection is unchanged.
   */
  cork(until: 'turn' | 'iteration'): void {
    if (this.corked || this.isCluster) return;
    const socket = (this.client as Redis).stream as { cork?: () => void; uncork?: () => void } | undefined;
    if (!socket?.cork || !socket.uncork) return;
    this.corked = true;
    socket.cork();
    const uncork = (): void => {
      this.corked = false;
      socket.uncork!();
    };
    if (until === 'iteration') setImmediate(uncork);
    else process.nextTick(uncork);
  }
}
