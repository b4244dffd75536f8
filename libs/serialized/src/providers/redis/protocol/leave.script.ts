import { type RedisLockKeys, HandOffScript, passOnResultOf, type PassOnResult, type ScriptClient } from './hand-off.reply';

/** Gateway to leave.lua: a waiter gives up its place, passing the key on if it was handed over meanwhile. */
export class LeaveScript extends HandOffScript {
  async run(client: ScriptClient, keys: RedisLockKeys, token: string): Promise<PassOnResult> {
    return passOnResultOf(
      await this.script.run(client, [keys.lock, keys.queue, keys.heartbeats, keys.fence, keys.holders, keys.shapes, token, ...this.passOn]),
    );
  }
}
