import type { Cluster, Redis } from 'ioredis';
import { LockBackendError } from '../../../errors/index';
import type { ScriptClient } from '../../../internal/lua.script';
import type { RedisClient } from './redis.client';

function noop(): void {}

/** A write and how many replicas had it when `WAIT` answered (0 when the answer cannot vouch for the write). */
export interface Acked<T> {
  readonly reply: T;
  readonly acked: number;
}

/**
 * Redis `WAIT` behind a write (a grant, a renewal), on the socket the write went
 * out on: `WAIT` counts the replicas that have every write of *its own client
 * connection* so far, so it vouches for a write only when both share one socket.
 * After a reconnect (a fail-over: the client now talks to the new master) a fresh
 * connection has written nothing, and its `WAIT` would answer at once with every
 * replica — for a write it never made. So an answer counts only when the socket
 * (and, with a Cluster, the node that holds the key's slot) is the one the write
 * went out on; otherwise it is taken as 0 acknowledgements: fail closed.
 *
 * Standalone and Sentinel clients: `WAIT` is written right behind the script, in
 * the same turn (one round trip; a script re-sent after `NOSCRIPT` gets a `WAIT`
 * of its own behind it). Cluster: the script goes through the Cluster client,
 * which may queue or redirect it, so `WAIT` follows its reply, on the connection
 * of the master that holds the slot (a second round trip), and counts only if
 * that master held the slot before the write and still does, and its socket is
 * the one the write's reply came on.
 *
 * `WAIT` holds the connection while it waits (Redis answers a connection's
 * commands in order), so every command behind it waits too: `timeoutMs` is kept
 * below the connection's silence bound (see redis-lock-provider.options.ts).
 */
export class ReplicaAcks {
  constructor(
    /** Replicas that must have the write. */
    readonly acks: number,
    /** `WAIT`'s timeout (ms). */
    readonly timeoutMs: number,
    /** Cluster only: the hash slot of a lock key (standalone: undefined). */
    private readonly slotOf: ((key: string) => number) | undefined,
  ) {}

  /** Whether `acked` acknowledgements make a write count. */
  enough(acked: number): boolean {
    return acked >= this.acks;
  }

  /** Why a grant or renewal did not count (`LockBackendError`, 503: fail closed). */
  unacked(key: string, what: string, acked?: number): LockBackendError {
    const count = acked === undefined ? '' : ` (${acked} acknowledged)`;
    return new LockBackendError(
      `${what} was not confirmed by ${this.acks} Redis replica${this.acks === 1 ? '' : 's'} within ${this.timeoutMs} ms${count}; it does not count`,
      { key },
    );
  }

  /** Runs `write` (a script) on `client` and `WAIT`s behind it; resolves with its reply and the acknowledgements. */
  after<T>(client: RedisClient, key: string, write: (client: ScriptClient) => Promise<T>): Promise<Acked<T>> {
    return this.slotOf ? this.afterOnNode(client as Cluster, key, write) : this.afterOnSocket(client as Redis, write);
  }

  private async afterOnSocket<T>(client: Redis, write: (client: ScriptClient) => Promise<T>): Promise<Acked<T>> {
    let socket: unknown;
    let wait: Promise<number> | undefined;
    const behind = (reply: Promise<unknown>): Promise<unknown> => {
      socket = client.stream;
      wait = client.wait(this.acks, this.timeoutMs);
      // Read below once the script answered; a script that failed leaves it unread.
      wait.catch(noop);
      return reply;
    };
    const reply = await write({
      evalsha: (sha, numKeys, ...keysAndArgs) => behind(client.evalsha(sha, numKeys, ...keysAndArgs)),
      eval: (script, numKeys, ...keysAndArgs) => behind(client.eval(script, numKeys, ...keysAndArgs)),
    });
    const acked = await wait!;
    return { reply, acked: client.stream === socket ? acked : 0 };
  }

  private async afterOnNode<T>(cluster: Cluster, key: string, write: (client: ScriptClient) => Promise<T>): Promise<Acked<T>> {
    const slot = this.slotOf!(key);
    const owner = cluster.slots[slot]?.[0];
    const reply = await write(cluster);
    const node = owner === undefined ? undefined : cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    if (!node || cluster.slots[slot]?.[0] !== owner) return { reply, acked: 0 };
    // The reply came on the node's socket as it is now (a node connects lazily, on its first command).
    const socket = node.stream;
    const acked = await node.wait(this.acks, this.timeoutMs);
    const same = node.stream === socket && cluster.slots[slot]?.[0] === owner;
    return { reply, acked: same ? acked : 0 };
  }
}
