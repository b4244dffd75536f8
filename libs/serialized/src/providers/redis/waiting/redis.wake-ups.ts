import { closeClient } from '../transport/redis.client';
import type { RedisClient, RedisConnection } from '../transport/redis.connection';

/**
 * Who hears the wake-up channel (`RedisBackend`). Why an interface: a host (the
 * provider's one, listed in scripts/check-structure.js): the subscriber's events come
 * when Redis sends them, not as the reply to anything this process asked, so they
 * can only be handed on.
 */
export interface WakeUpListener {
  /** Every message of the channel (a hand-off or a notice). */
  onMessage(message: string): void;
  /** After every (re)subscription: messages sent meanwhile are lost. */
  resync(): void;
}

/**
 * The process's single wake-up path: one subscriber connection on one channel of
 * its own (`<prefix>:wake:<session>`). A process that releases a key to a waiter of
 * another process publishes to that process's channel only, so nobody hears the
 * hand-offs of others and no channel is subscribed per key.
 *
 * Opened when a caller first has to wait. After every (re)subscription the
 * provider sends a heart-beat for each waiting key: a message sent while the subscriber was
 * away is lost, and the heart-beat's reply says what it said.
 */
export class RedisWakeUps {
  private subscriber: RedisClient | undefined;
  private closed = false;
  /** Subscribed and connected: a message published now reaches this process. */
  private subscribed = false;

  constructor(
    private readonly connection: RedisConnection,
    readonly channel: string,
    private readonly listener: WakeUpListener,
  ) {}

  /** Starts listening, once. */
  ensure(): void {
    if (this.subscriber || this.closed) return;
    const subscriber = this.connection.createSubscriber();
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.listener.onMessage(message);
    });
    subscriber.on('ready', () => this.subscribe());
    if (subscriber.status === 'ready') this.subscribe();
    else if (subscriber.status === 'wait') subscriber.connect().catch(() => undefined);
  }

  get listening(): boolean {
    return this.subscribed && this.subscriber?.status === 'ready';
  }

  async close(): Promise<void> {
    this.closed = true;
    const subscriber = this.subscriber;
    if (subscriber) await closeClient(subscriber);
  }

  private subscribe(): void {
    const subscriber = this.subscriber;
    if (!subscriber || this.closed) return;
    subscriber.subscribe(this.channel).then(
      () => {
        this.subscribed = true;
        if (!this.closed) this.listener.resync();
      },
      () => undefined, // retried on the next 'ready'; the heart-beat covers the gap
    );
  }
}
