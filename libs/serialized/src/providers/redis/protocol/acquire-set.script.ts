import type { LuaScript } from '../../../internal/lua.script';
import type { HandOffSettings, RedisLockKeys, ScriptClient } from './hand-off.reply';

/** What acquire-set.lua answered. */
export type AcquireSetResult =
  /** Every key taken: per key (in the order asked), its fencing token and the last token of its block. */
  | { readonly status: 'granted'; readonly fences: readonly number[]; readonly lasts: readonly number[] }
  /** A key was held, waited for or held beside others: nothing was taken. */
  | { readonly status: 'busy' }
  /** The first key is already this set's: the call reached Redis twice. */
  | { readonly status: 'twice' };

/**
 * Gateway to acquire-set.lua: a key set (canonical order) taken in one round trip
 * when every key is free, or nothing. Each key takes a block of tokens, as a lone
 * grant does (acquire.lua), so its holder's process may hand it on in-process.
 */
export class AcquireSetScript {
  constructor(
    /** Loaded with no fixed number of keys: each call passes its own. */
    private readonly script: LuaScript,
    private readonly settings: Pick<HandOffSettings, 'block'>,
  ) {}

  async run(client: ScriptClient, keys: readonly RedisLockKeys[], tokens: readonly string[], leaseMs: number): Promise<AcquireSetResult> {
    const keysAndArgs: (string | number)[] = [];
    for (const lock of keys) keysAndArgs.push(lock.lock, lock.queue, lock.holders, lock.fence);
    keysAndArgs.push(leaseMs, this.settings.block, ...tokens);
    const reply = (await this.script.run(client, keysAndArgs, keys.length * 4)) as number[];
    const status = Number(reply[0]);
    if (status === -1) return { status: 'busy' };
    if (status === 2) return { status: 'twice' };
    if (status !== 1 || reply.length !== 1 + keys.length * 2)
      throw new Error(`acquire-set.lua answered an unknown reply (status ${status})`);
    const fences: number[] = [];
    const lasts: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      fences.push(Number(reply[1 + i * 2]));
      lasts.push(Number(reply[2 + i * 2]));
    }
    return { status: 'granted', fences, lasts };
  }
}
