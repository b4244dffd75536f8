import { performance } from 'node:perf_hooks';
import type { RedisCallOptions } from '../transport/redis.call';
import type { RedisClient } from '../transport/redis.client';
import { URGENT, type RedisConnection } from '../transport/redis.connection';
import type { ReplicaAcks } from '../transport/replica.acks';
import type { AcquireResult } from './acquire.script';
import type { AcquireSetResult } from './acquire-set.script';
import type { PassOnResult, ScriptClient } from './hand-off.reply';
import type { HeartbeatResult } from './heartbeat.script';
import type { RedisLockKeys } from './redis.keyspace';
import type { RedisScripts } from './redis.scripts';

/**
 * The commands the waiters and tenures send: each sends one script and resolves
 * with its decoded reply and when it was sent (`performance.now()`: a lease a reply
 * grants counts from then). They hold no state and call nothing back; whoever sent
 * one interprets its reply.
 */
export interface Sent<T> {
  readonly reply: T;
  readonly sentAt: number;
  /**
   * With replica acknowledgements on: whether `WAIT` behind the command confirmed that
   * enough replicas have it (only `acquire` waits; a grant it made counts only then).
   */
  readonly synced?: boolean;
}

/** What every command needs: the command connection and the scripts (and, when grants need them, the replica acknowledgements). */
export interface Redis {
  readonly connection: RedisConnection;
  readonly scripts: RedisScripts;
  /** Set when a grant or renewal counts only once replicas have it (`replicas` option). */
  readonly replicas?: ReplicaAcks;
}

/** Sends `send` on the key's connection and dates it by when it went out. */
export function dated<T>(
  redis: Redis,
  key: string,
  send: (client: RedisClient) => Promise<T>,
  options?: RedisCallOptions,
): Promise<Sent<T>> {
  let sentAt = -Infinity;
  return redis.connection.run(key, (client) => ((sentAt = performance.now()), send(client)), options).then((reply) => ({ reply, sentAt }));
}

/**
 * acquire.lua: the key, or (mode `wait`) a place in its queue. `options`: a call
 * whose waiter gave up before it was sent is dropped unsent (`skip()`).
 */
export function acquire(
  redis: Redis,
  key: string,
  keys: RedisLockKeys,
  token: string,
  leaseMs: number,
  mode: 'wait' | 'try',
  options?: RedisCallOptions,
): Promise<Sent<AcquireResult>> {
  const { replicas } = redis;
  if (!replicas) return dated(redis, key, (client) => redis.scripts.acquire.run(client, { keys, token, leaseMs, mode }), options);
  // A free key is granted by this very script: `WAIT` rides right behind it (one round trip when standalone).
  return dated(
    redis,
    key,
    (client) => replicas.after(client, key, (c) => redis.scripts.acquire.run(c, { keys, token, leaseMs, mode })),
    options,
  ).then(({ reply, sentAt }) => ({ reply: reply.reply, sentAt, synced: replicas.enough(reply.acked) }));
}

/**
 * acquire-set.lua: a key set (canonical order, `tokens` its owner tokens) in one
 * round trip when every key is free, or nothing; sent on the connection of the
 * first key (the caller makes sure all of them live in its slot).
 */
export function acquireSet(
  redis: Redis,
  keys: readonly string[],
  lockKeys: readonly RedisLockKeys[],
  tokens: readonly string[],
  leaseMs: number,
): Promise<Sent<AcquireSetResult>> {
  const { replicas } = redis;
  const send = (client: ScriptClient) => redis.scripts.acquireSet.run(client, lockKeys, tokens, leaseMs);
  if (!replicas) return dated(redis, keys[0], send);
  return dated(redis, keys[0], (client) => replicas.after(client, keys[0], send)).then(({ reply, sentAt }) => ({
    reply: reply.reply,
    sentAt,
    synced: replicas.enough(reply.acked),
  }));
}

/**
 * extend.lua: owner-checked renewal to `px` ms, naming `fence` (the renewing holder's
 * fencing token) in the key's value (`shaped`: a holder beside others, shaped-extend.lua,
 * which keeps its token elsewhere). With replica acknowledgements on, a
 * renewal counts only once they confirm it: otherwise it rejects
 * (`LockBackendError`), a renewal that failed.
 */
export function extend(
  redis: Redis,
  key: string,
  keys: RedisLockKeys,
  token: string,
  px: number,
  fence: bigint | number,
  what = 'A renewal',
  shaped = false,
): Promise<Sent<boolean>> {
  const { replicas } = redis;
  const run = (client: ScriptClient): Promise<boolean> =>
    shaped
      ? redis.scripts.shapedExtend.run(client, keys.holders, token, px, keys.shapes)
      : redis.scripts.extend.run(client, keys.lock, token, px, fence);
  if (!replicas) return dated(redis, key, run, URGENT);
  return dated(redis, key, (client) => replicas.after(client, key, run), URGENT).then(({ reply, sentAt }) => {
    if (reply.reply && !replicas.enough(reply.acked)) throw replicas.unacked(key, what, reply.acked);
    return { reply: reply.reply, sentAt, synced: true };
  });
}

/** leave.lua: gives up `token`'s place, or passes the key on if `token` holds it. */
export function leave(redis: Redis, key: string, keys: RedisLockKeys, token: string): Promise<Sent<PassOnResult>> {
  return dated(redis, key, (client) => redis.scripts.leave.run(client, keys, token), URGENT);
}

/** heartbeat.lua for this process's places `tokens` of the key. */
export function heartbeat(redis: Redis, key: string, keys: RedisLockKeys, tokens: readonly string[]): Promise<Sent<HeartbeatResult>> {
  return dated(redis, key, (client) => redis.scripts.heartbeat.run(client, keys, tokens), URGENT);
}

/**
 * release.lua with `keep`: the tenure's next block, reserved ahead (removing the
 * served waiters' places), while the holder of fencing token `holder` holds the key.
 */
export function refill(
  redis: Redis,
  key: string,
  keys: RedisLockKeys,
  token: string,
  served: readonly string[],
  leaseMs: number,
  holder: bigint,
): Promise<Sent<PassOnResult>> {
  return dated(redis, key, (client) => redis.scripts.release.run(client, keys, token, served, leaseMs, holder), URGENT);
}

/** Whether a lease of `px` ms that started no earlier than `since` can be given to a caller as it is. */
export function isFresh(since: number, px: number): boolean {
  return performance.now() - since <= px / 3;
}

/**
 * What Redis said when asked whether a grant still stands: the lease's new start
 * (`performance.now()` time of the question) when it does, `'lost'` when the key
 * is no longer the token's, `'late'` when it was every time but each answer came
 * back too late to count (the key may still be the token's: pass it on).
 */
export type GrantConfirmation = number | 'lost' | 'late';

/** How often a confirmation whose answer came too late is asked again. */
const MAX_ASKS = 3;

/**
 * Grant re-confirmation (docs/semantics.md): ownership is confirmed, never
 * assumed. A grant reaches this process as a reply (counted from when its command
 * was *sent*) or as a message (counted from when the event loop was last known
 * responsive, see `EventLoopStallMonitor`). A grant whose lease may have run out by
 * the time the caller would run is not given to it as it is: Redis is asked, with
 * an owner-checked extension to `px` whose lease counts from when the question was
 * sent. The bar is the renewal point: a caller is given a lock with at least two
 * thirds of its lease ahead, as right after a renewal (the key's value then names
 * `fence`, the grant's fencing token). Rejects (`LockBackendError`)
 * when Redis cannot be asked; the key may then still be the token's.
 */
export async function confirm(
  redis: Redis,
  key: string,
  keys: RedisLockKeys,
  token: string,
  px: number,
  fence: number,
  shaped = false,
): Promise<GrantConfirmation> {
  for (let ask = 0; ask < MAX_ASKS; ask++) {
    // With replica acknowledgements on, this is also where a grant waits for them: the
    // owner-checked write covers, in the replication stream, the grant and its tokens.
    const { reply: ours, sentAt } = await extend(redis, key, keys, token, px, fence, 'A grant', shaped);
    if (!ours) return 'lost';
    if (isFresh(sentAt, px)) return sentAt;
  }
  return 'late';
}
