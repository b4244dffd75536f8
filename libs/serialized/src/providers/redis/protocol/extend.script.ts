import type { RunnableScript, ScriptClient } from './hand-off.reply';

/** Gateway to extend.lua: owner-checked renewal. */
export class ExtendScript {
  constructor(private readonly script: RunnableScript) {}

  /**
   * Whether the key was still `token`'s; its lease then ends `px` ms from when Redis
   * ran this, and the key's value names `fence`, the fencing token of the holder
   * renewing (lock-value.lua).
   */
  async run(client: ScriptClient, lockKey: string, token: string, px: number, fence: bigint | number): Promise<boolean> {
    return (await this.script.run(client, [lockKey, token, px, fence.toString()])) === 1;
  }
}
