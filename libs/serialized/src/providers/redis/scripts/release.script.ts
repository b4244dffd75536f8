import { type LockKeys, handOffArgs, passOnResultOf, type HandOffSettings, type PassOnResult, type RunnableScript, type ScriptClient } from './hand-off';

/** Gateway to release.lua: owner-checked release that hands the key straight to the first live waiter. */
export class ReleaseScript {
  private readonly passOn: readonly [number, string, string];

  constructor(
    private readonly script: RunnableScript,
    settings: HandOffSettings,
  ) {
    this.passOn = handOffArgs(settings);
  }

  /** `none`: the key was no longer `token`'s (already released, or lost). */
  async run(client: ScriptClient, keys: LockKeys, token: string): Promise<PassOnResult> {
    return passOnResultOf(await this.script.run(client, [keys.lock, keys.queue, keys.heartbeats, token, ...this.passOn]));
  }
}
