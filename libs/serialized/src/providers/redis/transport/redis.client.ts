import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { SerializedConfigError } from '../../../config/serialized-config.error';
import { loadIoredis } from './redis.driver';

/** A standalone, Sentinel or Cluster client. */
export type RedisClient = Redis | Cluster;

/**
 * Longest pause between reconnection attempts of the connections the library
 * opens: held locks are re-checked as soon as the connection is back, so a lock
 * that Redis lost is known lost within about this long of Redis answering again.
 */
const RECONNECT_MAX_DELAY_MS = 1000;

/** Statuses of a client with no socket open, waiting to reconnect (or never started). */
const BETWEEN_ATTEMPTS = new Set(['reconnecting', 'close', 'wait', 'end']);

/** How long a socket dropped by `disconnect()` may take to close before it is destroyed. */
const DISCONNECT_TIMEOUT_MS = 100;

/** How long a polite `QUIT` may take before the socket is simply dropped. */
const QUIT_TIMEOUT_MS = 2000;

/**
 * Who owns which client. A URL makes the library open (lazily) and close its own
 * connections; a client passed in is the app's, and the library never closes it.
 * Subscribers are always the library's own (a duplicate of the app's client).
 */
export class RedisClientOwner {
  readonly client: RedisClient;
  readonly isCluster: boolean;
  readonly ownsClient: boolean;

  constructor(
    private readonly source: { url?: string; client?: RedisClient },
    private readonly connectTimeoutMs: number,
    private readonly onError: (error: Error) => void,
  ) {
    if (source.client) {
      this.client = source.client;
      this.ownsClient = false;
    } else if (source.url) {
      this.client = this.open();
      this.ownsClient = true;
    } else {
      throw new SerializedConfigError(["driver 'redis' needs redis.url (or REDIS_URL) or redis.client"]);
    }
    this.isCluster = RedisClientOwner.isClusterClient(this.client);
  }

  /** Whether `client` is a Cluster client (commands routed per hash slot); a URL always opens a standalone one. */
  static isClusterClient(client: RedisClient | undefined): boolean {
    return (client as { isCluster?: boolean } | undefined)?.isCluster === true;
  }

  /** A second connection like the command one, for subscribing (always the library's own). */
  createSubscriber(): RedisClient {
    let subscriber: RedisClient;
    if (this.source.url) subscriber = this.open();
    else if (this.isCluster) subscriber = (this.client as Cluster).duplicate();
    else subscriber = (this.client as Redis).duplicate({ lazyConnect: true, disconnectTimeout: DISCONNECT_TIMEOUT_MS });
    subscriber.on('error', this.onError);
    return subscriber;
  }

  /** Closes the command client if the library opened it; a client passed in is left open. */
  async close(): Promise<void> {
    if (this.ownsClient) await closeClient(this.client);
  }

  private open(): Redis {
    const { Redis } = loadIoredis();
    const options: RedisOptions = {
      lazyConnect: true,
      connectTimeout: this.connectTimeoutMs,
      // Fail in-flight commands on a disconnect instead of replaying them later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_MAX_DELAY_MS),
      // ioredis waits this long for a socket to close before destroying it, with a timer
      // that keeps the process alive — also for the dead socket of a connection between
      // two reconnection attempts. `QUIT` is what closes our connections politely.
      disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    };
    const client = new Redis(this.source.url!, options);
    client.on('error', this.onError);
    return client;
  }
}

/**
 * Quits politely when connected (pending replies still arrive), otherwise just
 * disconnects; resolves once the connection is gone.
 */
export async function closeClient(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
  if (client.status === 'ready') {
    client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
    // Between two attempts to reconnect there is no socket to close, so ioredis
    // emits no 'end': `disconnect()` has cancelled the next attempt, and that is all.
    if (BETWEEN_ATTEMPTS.has(client.status)) return;
  }
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<void>((resolve) => (timer = setTimeout(resolve, QUIT_TIMEOUT_MS)));
  await Promise.race([ended, stuck]);
  clearTimeout(timer);
  if ((client.status as string) !== 'end') client.disconnect();
}
