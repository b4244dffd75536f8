import path from 'node:path';
import { LuaScript, type ScriptClient } from '../../../internal/lua.script';
import type { RedisLockKeys } from './redis.keyspace';

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
}

/**
 * Gateway to inspect.lua, the read-only look at a lock behind `LockService.inspect`.
 * Loaded on its own (not among the provider's hand-off scripts): nothing else runs it.
 */
export class InspectScript {
  private readonly script = LuaScript.load(path.join(__dirname, 'lua'), 'inspect', 2);

  async run(client: ScriptClient, keys: RedisLockKeys, session: string): Promise<InspectedLock> {
    const [owner, pttl, places, mine] = (await this.script.run(client, [keys.lock, keys.queue, session, INSPECT_WINDOW])) as [
      string,
      number,
      number,
      number,
    ];
    return { owner: String(owner ?? ''), pttl: Number(pttl), places: Number(places), mine: Number(mine) };
  }
}
