import { performance } from 'node:perf_hooks';
import type { Logger } from '@nestjs/common';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { SerializedConfigError } from '../../config/serialized-config.error';
import { LockBackendError } from '../../errors';
import type { LazyDeadline, LazyDeadlineQueue } from './lazy-deadline-queue';
import { loadIoredis } from './redis-driver';

/** A standalone, Sentinel or Cluster client. */
export type RedisClient = Redis | Cluster;

/** Where the provider's commands go. */
export interface RedisConnectionOptions {
  /** The library opens (lazily) and closes its own connections to this URL. */
  url?: string;
  /** A client the app already has; the library never closes it. */
  client?: RedisClient;
  /** Bound on reaching Redis (connecting and each command) before `LockBackendError`. */
  connectTimeoutMs: number;
}

interface ReadyWaiter {
  readonly key: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  deadline: LazyDeadline | undefined;
}

/**
 * The command connection, failing closed and fast. A command is sent only on a
 * ready connection; while the client (re)connects, callers wait for it up to
 * `connectTimeoutMs`, and every command is bounded by the same time. So an
 * unreachable Redis is a `LockBackendError` within the connect timeout, never a
 * hang until the wait timeout; when Redis returns, the client's own reconnection
 * makes the next call work again.
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
  private readonly readyWaiters = new Set<ReadyWaiter>();
  private readonly readyListeners = new Set<() => void>();
  /** Failures of calls that never left this process (nothing to undo in Redis). */
  private readonly unsent = new WeakSet<Error>();
  private lastError: Error | undefined;
  private warned = false;
  private closed = false;
  private readonly onReady = (): void => this.ready();
  private readonly onEnd = (): void => this.ended();
  readonly onError = (error: Error): void => this.reportError(error);

  constructor(
    options: RedisConnectionOptions,
    private readonly deadlines: LazyDeadlineQueue,
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
    this.client.on('ready', this.onReady);
    this.client.on('end', this.onEnd);
  }

  /**
   * Sends a command once the connection is ready, bounded by the connect timeout.
   * Any failure is a `LockBackendError` naming `key`; the command may or may not
   * have run, so callers undo what it might have done.
   */
  run<T>(key: string, send: (client: RedisClient) => Promise<T>): Promise<T> {
    if (this.client.status === 'ready' && !this.closed) return this.bounded(key, send, this.timeoutMs);
    return this.afterReady(key, send);
  }

  /** Whether a failed call may have reached Redis (then what it did may need undoing). */
  mayHaveRun(error: unknown): boolean {
    return !(error instanceof Error && this.unsent.has(error));
  }

  /** Calls `listener` whenever the connection becomes ready again. */
  onReconnect(listener: () => void): void {
    this.readyListeners.add(listener);
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
    for (const waiter of [...this.readyWaiters]) this.failWaiter(waiter, this.unsentError(this.closedError(waiter.key)));
    this.client.off('ready', this.onReady);
    this.client.off('end', this.onEnd);
    this.readyListeners.clear();
    if (this.ownsClient) await closeClient(this.client);
  }

  private open(): Redis {
    const { Redis } = loadIoredis();
    const options: RedisOptions = {
      lazyConnect: true,
      connectTimeout: this.timeoutMs,
      // Fail in-flight commands on a disconnect instead of replaying them later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    };
    const client = new Redis(this.url!, options);
    client.on('error', this.onError);
    return client;
  }

  private bounded<T>(key: string, send: (client: RedisClient) => Promise<T>, budgetMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const deadline = this.deadlines.schedule(budgetMs, () => {
        if (settled) return;
        settled = true;
        reject(this.unreachable(key, `no reply from Redis within ${this.timeoutMs} ms`));
      });
      const onValue = (value: T): void => {
        if (settled) return;
        settled = true;
        this.deadlines.cancel(deadline);
        resolve(value);
      };
      const onError = (error: unknown): void => {
        if (settled) return;
        settled = true;
        this.deadlines.cancel(deadline);
        reject(this.failed(key, error));
      };
      try {
        send(this.client).then(onValue, onError);
      } catch (error) {
        onError(error);
      }
    });
  }

  private afterReady<T>(key: string, send: (client: RedisClient) => Promise<T>): Promise<T> {
    if (this.closed || this.client.status === 'end') return Promise.reject(this.unsentError(this.closedError(key)));
    const started = performance.now();
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    return new Promise<void>((resolve, reject) => {
      const waiter: ReadyWaiter = { key, resolve, reject, deadline: undefined };
      waiter.deadline = this.deadlines.schedule(this.timeoutMs, () => {
        waiter.deadline = undefined;
        this.failWaiter(waiter, this.unsentError(this.unreachable(key, `could not connect within ${this.timeoutMs} ms`)));
      });
      this.readyWaiters.add(waiter);
    }).then(() => {
      // What is left of the budget, but enough for one round trip on a fresh connection.
      const left = this.timeoutMs - (performance.now() - started);
      return this.bounded(key, send, Math.max(left, Math.min(250, this.timeoutMs)));
    });
  }

  private ready(): void {
    this.warned = false;
    this.lastError = undefined;
    for (const waiter of [...this.readyWaiters]) {
      this.readyWaiters.delete(waiter);
      if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
      waiter.resolve();
    }
    for (const listener of this.readyListeners) {
      try {
        listener();
      } catch {
        // A listener only schedules work; it has no one to report to.
      }
    }
  }

  private ended(): void {
    for (const waiter of [...this.readyWaiters]) this.failWaiter(waiter, this.unsentError(this.closedError(waiter.key)));
  }

  private failWaiter(waiter: ReadyWaiter, error: Error): void {
    this.readyWaiters.delete(waiter);
    if (waiter.deadline) this.deadlines.cancel(waiter.deadline);
    waiter.reject(error);
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
  }
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)));
  await Promise.race([ended, stuck]);
  clearTimeout(timer);
  if ((client.status as string) !== 'end') client.disconnect();
}
