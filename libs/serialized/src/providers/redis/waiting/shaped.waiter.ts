import type { HandOffMode } from '../../../acquire-options.interface';
import type { LineCaller } from '../../../local/line.caller';
import type { RedisLock } from '../holding/redis.lock';
import type { RedisLockKeys } from '../protocol/redis.keyspace';
import type { RedisCallOptions } from '../transport/redis.call';

/**
 * A shaped waiter's phases: the plain waiter's (models/VOCABULARY.md) without riding,
 * since every shaped grant is made at Redis (no local hand-off, no rider).
 */
export type ShapedPhase = 'sending' | 'queued' | 'confirming' | 'granted' | 'gave-up';

/**
 * One caller of the local layer waiting for a key beside others (`concurrency` > 1,
 * `shared`): its Redis state, changed only through the transitions below. It is also
 * the options of its acquire call: one whose waiter gave up before it was sent is
 * dropped unsent.
 */
export class ShapedWaiter implements RedisCallOptions {
  private phaseNow: ShapedPhase = 'sending';
  private tokenNow: string;
  private handedNow = false;

  constructor(
    readonly key: string,
    readonly keys: RedisLockKeys,
    token: string,
    readonly leaseMs: number,
    /** The layer's caller it waits for. */
    readonly caller: LineCaller<RedisLock>,
  ) {
    this.tokenNow = token;
  }

  /** Its limit as the scripts take it: the most holders it accepts, 0 when shared. */
  get limit(): number {
    return this.caller.shared ? 0 : this.caller.limit;
  }

  get phase(): ShapedPhase {
    return this.phaseNow;
  }

  /** Its owner token (a waiter whose grant was lost waits again under a new one). */
  get token(): string {
    return this.tokenNow;
  }

  /** The key was given to it (granted, or as it gave up: its leave passes it on). */
  get handed(): boolean {
    return this.handedNow;
  }

  get done(): boolean {
    return this.phaseNow === 'granted' || this.phaseNow === 'gave-up';
  }

  get signal(): AbortSignal | undefined {
    return this.caller.signal;
  }

  get startedAt(): number {
    return this.caller.startedAt;
  }

  get waitTimeoutMs(): number {
    return this.caller.waitTimeoutMs;
  }

  get handoff(): HandOffMode | undefined {
    return this.caller.handoff;
  }

  /** Asked by the connection just before the acquire call is sent. */
  skip(): boolean {
    return this.done;
  }

  /** `place`: the acquire reply queued it. */
  place(): void {
    this.move('place', 'queued', 'sending');
  }

  /** `confirm`: handed the key, but the grant may have run out (or replicas must have it): Redis is asked. */
  confirm(): void {
    this.move('confirm', 'confirming', 'sending', 'queued');
  }

  /** `grant` (or `confirmed`): it holds `lock` (told to its caller: the layer's). */
  grant(lock: RedisLock): void {
    this.move('grant', 'granted', 'sending', 'queued', 'confirming');
    this.handedNow = true;
    this.caller.granted(lock);
  }

  /** `requeue`: it has nothing in Redis any more; it is sent again under `token`. */
  requeue(token: string): void {
    this.move('requeue', 'sending', 'queued', 'confirming');
    this.tokenNow = token;
  }

  /** `give-up` with `error` (`handed`: the key came as it gave up). */
  giveUp(error: unknown, handed = false): void {
    this.move('give-up', 'gave-up', 'sending', 'queued', 'confirming');
    this.handedNow = handed;
    this.caller.refused(error);
  }

  private move(transition: string, to: ShapedPhase, ...from: ShapedPhase[]): void {
    if (!from.includes(this.phaseNow))
      throw new Error(`nestjs-serialized: a ${this.phaseNow} shaped waiter cannot ${transition} (a bug: please report it)`);
    this.phaseNow = to;
  }
}
