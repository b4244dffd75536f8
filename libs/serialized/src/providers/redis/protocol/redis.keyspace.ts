import { SlotTags, slotOfTag } from './redis-key.slot';

/** The Redis keys of one lock. */
export interface RedisLockKeys {
  /** Owner token of the holder, expiring with its lease. */
  readonly lock: string;
  /** Waiters in arrival order (score: fencing token drawn on arrival). */
  readonly queue: string;
  /** Waiters' heart-beats (score: server time until which each counts as alive). */
  readonly heartbeats: string;
  /** The fencing counter this lock draws from (same Cluster slot as the others). */
  readonly fence: string;
  /** Shaped holders (`concurrency` > 1, `shared`; score: server time their lease ends), protocol/lua/shaped.lua. */
  readonly holders: string;
  /** Shaped callers, queued or holding, with their limit (0: shared) and, once granted, their fencing token. */
  readonly shapes: string;
}

const SPECIAL = /[%{}]/;

/**
 * Braces would move or empty the hash tag, so they are percent-encoded (and `%`
 * with them, keeping the mapping one-to-one): every key of one lock then shares
 * the tag `{<key>}` whatever the key contains.
 */
export function escapeKeyPart(text: string): string {
  if (!SPECIAL.test(text)) return text;
  return text.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/**
 * Names every key and channel a provider uses under its `keyPrefix`:
 * `<prefix>:{<key>}`, `<prefix>:{<key>}:q`, `<prefix>:{<key>}:hb` (and for shaped
 * holders `:h` and `:s`), the fencing
 * counter `<prefix>:fence` (in Cluster one per slot, `<prefix>:fence:{<tag>}`), and
 * the wake-up channels `<prefix>:wake:<session>`.
 */
export class RedisKeyspace {
  readonly prefix: string;
  /** Prefix of every process's wake-up channel; the session id completes it. */
  readonly channelPrefix: string;
  private readonly fenceKey: string;
  private readonly slotTags: SlotTags | undefined;

  constructor(
    keyPrefix: string,
    /** Keys are routed per hash slot (Redis Cluster). */
    readonly isCluster: boolean,
  ) {
    this.prefix = escapeKeyPart(keyPrefix);
    this.channelPrefix = `${this.prefix}:wake:`;
    this.fenceKey = `${this.prefix}:fence`;
    this.slotTags = isCluster ? new SlotTags() : undefined;
  }

  keysOf(key: string): RedisLockKeys {
    const tag = escapeKeyPart(key);
    const lock = `${this.prefix}:{${tag}}`;
    return {
      lock,
      queue: `${lock}:q`,
      heartbeats: `${lock}:hb`,
      holders: `${lock}:h`,
      shapes: `${lock}:s`,
      fence: this.slotTags ? `${this.fenceKey}:{${this.slotTags.tagFor(slotOfTag(tag))}}` : this.fenceKey,
    };
  }

  /** The Cluster hash slot every Redis key of `key`'s lock lives in. */
  slotOf(key: string): number {
    return slotOfTag(escapeKeyPart(key));
  }

  /** Whether `redisKey` is a fencing counter of this keyspace (they outlive every lock by design). */
  isFenceKey(redisKey: string): boolean {
    return redisKey === this.fenceKey || redisKey.startsWith(`${this.fenceKey}:{`);
  }
}
