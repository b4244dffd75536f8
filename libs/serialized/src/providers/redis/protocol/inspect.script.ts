import path from 'node:path';
import { LuaScript, type ScriptClient } from '../../../internal/lua.script';
import type { RedisLockKeys } from './redis.keyspace';
import { lockValuePrelude } from './redis.scripts';

/** Places of the queue `inspect.lua` looks at for the caller's own (its bound). */
export const INSPECT_WINDOW = 256;

/** What inspect.lua read of one lock. */
export interface InspectedLock {
  /** Owner token of the holder in Redis ('' when the key is free). */
  readonly owner: string;
  /** What is left of the holder's lease (ms; negative when the key is free). */
  readonly pttl: number;
  /** Places in the Redis queue (waiters of every process with a place, live or not yet passed over). */
  readonly places: number;
  /** Of the first {@link INSPECT_WINDOW} places, those of the caller's session. */
  readonly mine: number;
  /**
   * The holder's fencing token as the key's value names it (lock-value.lua: written
   * by grants, renewals and releases that keep the key; a local hand-off shows from
   * the new holder's first renewal on). Undefined when the key is free.
   */
  readonly fence: bigint | undefined;
  /** Holders beside each other (`concurrency`, `shared`), of every process: the first {@link INSPECT_WINDOW}. */
  readonly shaped: readonly ShapedHolderSeen[];
}

/** One holder of a key held together, as inspect.lua read it. */
export interface ShapedHolderSeen {
  /** Its owner token (`<session>:<n>`). */
  readonly owner: string;
  /** A reader (`shared`), not a member of a `concurrency` group. */
  readonly shared: boolean;
  readonly fence: bigint | undefined;
  /** Lease left by the server's clock (ms; at most 0 once lapsed and not yet dropped). */
  readonly leaseRemainingMs: number;
}

/**
 * Gateway to inspect.lua, the read-only look at a lock behind `LockService.inspect`.
 * Loaded on its own (not among the provider's hand-off scripts): nothing else runs it.
 */
export class InspectScript {
  private readonly script = LuaScript.load(path.join(__dirname, 'lua'), 'inspect', 4, lockValuePrelude());

  async run(client: ScriptClient, keys: RedisLockKeys, session: string): Promise<InspectedLock> {
    const [owner, pttl, places, mine, fence, shaped] = (await this.script.run(client, [
      keys.lock,
      keys.queue,
      keys.holders,
      keys.shapes,
      session,
      INSPECT_WINDOW,
    ])) as [string, number, number, number, string, (string | number)[]];
    return {
      owner: String(owner ?? ''),
      pttl: Number(pttl),
      places: Number(places),
      mine: Number(mine),
      fence: fence ? BigInt(fence) : undefined,
      shaped: shapedSeen(shaped ?? []),
    };
  }
}

/** inspect.lua's flat list of shaped holders (member, "<limit>:<token>", lease left), decoded. */
function shapedSeen(flat: readonly (string | number)[]): ShapedHolderSeen[] {
  const seen: ShapedHolderSeen[] = [];
  for (let i = 0; i + 2 < flat.length; i += 3) {
    const shape = /^(\d+)(?::(\d+))?$/.exec(String(flat[i + 1]));
    seen.push({
      owner: String(flat[i]),
      shared: shape?.[1] === '0',
      fence: shape?.[2] ? BigInt(shape[2]) : undefined,
      leaseRemainingMs: Number(flat[i + 2]),
    });
  }
  return seen;
}
