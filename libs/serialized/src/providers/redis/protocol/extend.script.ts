import type { RunnableScript, ScriptClient } from './hand-off.reply';

/** Gateway to extend.lua: owner-checked renewal. */
export class ExtendScript {
  constructor(private readonly script: RunnableScript) {}

  /** Whether the key was still `token`'s; its lease then ends `px` ms from when Redis ran this. */
  async run(client: ScriptClient, lockKey: string, token: string, px: number): Promise<boolean> {
    return (await this.script.run(client, [lockKey, token, px])) === 1;
  }
}
