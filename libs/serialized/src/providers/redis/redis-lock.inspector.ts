import { performance } from 'node:perf_hooks';
import { holderHere } from '../../inspect/holder.here';
import type { KeyInspector } from '../../inspect/key-inspector.interface';
import type { LockHolderInfo, LockInfo } from '../../inspect/lock-info.interface';
import type { LockLines } from '../../local/lock.lines';
import type { RedisLock } from './holding/redis.lock';
import { InspectScript } from './protocol/inspect.script';
import type { RedisKeyspace } from './protocol/redis.keyspace';
import type { RedisConnection } from './transport/redis.connection';

/** The part of the provider an inspection reads. */
export interface RedisInspectedParts {
  readonly connection: RedisConnection;
  readonly keyspace: RedisKeyspace;
  /** This provider's session (the first part of its owner tokens). */
  readonly session: string;
  /** The provider's local layer: this process's holder of a key and its callers waiting (sending, queued in Redis, or riding). */
  readonly lines: Pick<LockLines<RedisLock>, 'inspectHere'>;
}

/**
 * `LockService.inspect` for the Redis driver: one read-only script (`inspect.lua`:
 * the lock's value — owner token and fencing token — and PTTL, the queue's length,
 * and this session's places among its first 256) and this process's own holder and
 * waiters. Another process's holder is listed with its session, the fencing token
 * the key's value names (after a local hand-off in that process, the previous
 * holder's until the new one's first renewal: protocol/lua/lock-value.lua) and its
 * lease left; so is each of another process's holders of a key held together
 * (`concurrency`, `shared`: the first 256), with its own token and lease.
 */
export class RedisLockInspector implements KeyInspector {
  private readonly script = new InspectScript();

  constructor(private readonly parts: RedisInspectedParts) {}

  async inspect(key: string): Promise<LockInfo> {
    const { connection, keyspace, session, lines } = this.parts;
    const seen = await connection.run(key, (client) => this.script.run(client, keyspace.keysOf(key), session));
    const now = performance.now();
    const ownerSession = seen.owner === '' ? undefined : seen.owner.slice(0, seen.owner.indexOf(':'));
    const lease = seen.pttl >= 0 ? { leaseRemainingMs: seen.pttl } : {};
    const token = seen.fence === undefined ? {} : { fencingToken: seen.fence };
    const holders: LockHolderInfo[] = [];
    const here = lines.inspectHere(key);
    if (here.holder && !here.holder.released)
      holders.push(holderHere(here.holder, now, { instance: session, ...(ownerSession === session ? lease : {}) }));
    // Holders of this process beside the first, when they hold the key together (`concurrency`, `shared`): each its own lock.
    for (const lock of here.others ?? []) if (!lock.released) holders.push(holderHere(lock, now, { instance: session }));
    if (here.shared) for (const holder of holders) holder.shared = true;
    // Kept in Redis under this session with no holder here right now (a release on its way, riders next).
    if (ownerSession === session && holders.length === 0)
      holders.push({ ...token, here: true, instance: session, shared: false, ...lease });
    if (ownerSession !== undefined && ownerSession !== session)
      holders.push({ ...token, here: false, instance: ownerSession, shared: false, ...lease });
    // Holders of other processes beside each other (this process's are listed above, from its own line).
    for (const other of seen.shaped) {
      const instance = other.owner.slice(0, other.owner.indexOf(':'));
      if (instance === session || other.leaseRemainingMs <= 0) continue;
      holders.push({
        ...(other.fence === undefined ? {} : { fencingToken: other.fence }),
        here: false,
        instance,
        shared: other.shared,
        leaseRemainingMs: other.leaseRemainingMs,
      });
    }
    const waitingHere = here.waiting;
    // Waiters of other processes with a place, and all of this process's (riders have no place).
    return { key, holders, waiting: Math.max(0, seen.places - seen.mine) + waitingHere, waitingHere };
  }
}
