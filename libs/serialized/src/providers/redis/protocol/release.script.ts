import { type RedisLockKeys, HandOffScript, passOnResultOf, type PassOnResult, type ScriptClient } from './hand-off.reply';

/** Gateway to release.lua: owner-checked release that hands the key straight to the first live waiter. */
export class ReleaseScript extends HandOffScript {
  /**
   * `none`: the key was no longer `token`'s (already released, or lost). `served`:
   * owner tokens of waiters this process handed the key to in-process under `token`
   * (their places leave the queue first). `keepMs` > 0: when nobody is queued, keep
   * the key that long more with a fresh block of tokens (`kept`) instead; the key's
   * value then names `holder` (a refill: the holder of this process that holds the
   * key meanwhile), else the block's first token, the next holder's.
   */
  async run(
    client: ScriptClient,
    keys: RedisLockKeys,
    token: string,
    served: readonly string[] = [],
    keepMs = 0,
    holder?: bigint,
  ): Promise<PassOnResult> {
    const named = holder === undefined ? '' : holder.toString();
    return passOnResultOf(
      await this.script.run(client, [
        keys.lock,
        keys.queue,
        keys.heartbeats,
        keys.fence,
        keys.holders,
        keys.shapes,
        token,
        ...this.passOn,
        keepMs,
        named,
        ...served,
      ]),
    );
  }
}
