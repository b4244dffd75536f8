import { type RedisLockKeys, HandOffScript, handOffOf, type HandOff, type RunnableScript, type ScriptClient } from './hand-off.reply';

/**
 * The gateways of the shaped scripts (holders beside each other: `concurrency` > 1,
 * `shared`; lua/shaped.lua and docs/protocol.md, "Several holders of one key"):
 * arguments in, decoded reply out.
 */

/** The key's six Redis keys in the scripts' order. */
function keysOf(keys: RedisLockKeys): string[] {
  return [keys.lock, keys.queue, keys.heartbeats, keys.fence, keys.holders, keys.shapes];
}

/** What shaped-acquire.lua answered. */
export interface ShapedAcquireResult {
  /** `granted`: it holds the key beside the others; `queued`: it has a place; `busy`: a try found no room; `twice`: the call reached Redis twice. */
  readonly status: 'granted' | 'queued' | 'busy' | 'twice';
  /** `granted`: its fencing token; `queued`: its place. */
  readonly fence: number;
  /** `granted`: its lease; otherwise what is left of the holding (-2: nobody holds). */
  readonly pttl: number;
  /** A plain waiter the call passed a free key to on its way. */
  readonly handed: HandOff | undefined;
}

const STATUS = { 1: 'granted', 0: 'queued', [-1]: 'busy', 2: 'twice' } as const;

/** Gateway to shaped-acquire.lua: a place among the holders, or in the queue, in one round trip. */
export class ShapedAcquireScript extends HandOffScript {
  /** `limit`: the most holders the caller accepts (0: shared). */
  async run(
    client: ScriptClient,
    keys: RedisLockKeys,
    token: string,
    leaseMs: number,
    mode: 'wait' | 'try',
    limit: number,
  ): Promise<ShapedAcquireResult> {
    const reply = (await this.script.run(client, [
      ...keysOf(keys),
      token,
      leaseMs,
      mode,
      this.settings.heartbeatMs,
      ...this.passOn,
      limit,
    ])) as [number, number, number, string, number, number, number, number];
    const [status, fence, pttl, member, handedFence, handedPx, handedLast, handedFloor] = reply;
    const decoded = STATUS[status as keyof typeof STATUS];
    if (decoded === undefined) throw new Error(`shaped-acquire.lua answered an unknown status ${status}`);
    return {
      status: decoded,
      fence: Number(fence),
      pttl: Number(pttl),
      handed: handOffOf(member, handedFence, handedPx, handedLast, handedFloor),
    };
  }
}

/** What shaped-release.lua answered. */
export interface ShapedReleaseResult {
  /** The token held the key with its lease running (false: its place had lapsed, or it only waited). */
  readonly held: boolean;
  readonly handed: HandOff | undefined;
}

/** Gateway to shaped-release.lua: a shaped caller lets go of its holding or of its place; the first waiters get what it freed. */
export class ShapedReleaseScript extends HandOffScript {
  async run(client: ScriptClient, keys: RedisLockKeys, token: string): Promise<ShapedReleaseResult> {
    const reply = (await this.script.run(client, [...keysOf(keys), token, ...this.passOn])) as unknown[];
    return {
      held: Number(reply[0]) === 1,
      handed: Number(reply[1]) === 1 ? handOffOf(reply[2], reply[3], reply[4], reply[5], reply[6]) : undefined,
    };
  }
}

/** Gateway to shaped-extend.lua: a shaped holder's renewal. Same shape as `ExtendScript` (a lock's renewals go through either). */
export class ShapedExtendScript {
  constructor(private readonly script: RunnableScript) {}

  /** Whether the place was still `token`'s (`holdersKey`: the lock's `holders`, `shapesKey` its `shapes`). */
  async run(client: ScriptClient, holdersKey: string, token: string, px: number, shapesKey: string): Promise<boolean> {
    return (await this.script.run(client, [holdersKey, shapesKey, token, px])) === 1;
  }
}

/** What shaped-heartbeat.lua answered. */
export interface ShapedHeartbeatResult {
  /** What is left of the holding (-2: nobody holds). */
  readonly pttl: number;
  /** A plain waiter the heart-beat passed a free key to. */
  readonly handed: HandOff | undefined;
  /** Tokens asked about that hold the key (their grant message was missed): fencing token and lease left. */
  readonly granted: readonly { readonly token: string; readonly fence: number; readonly px: number }[];
  /** Tokens asked about that are neither queued nor holding. */
  readonly missing: readonly string[];
}

/** Gateway to shaped-heartbeat.lua: one process's heart-beat for its shaped waiters of one key. */
export class ShapedHeartbeatScript extends HandOffScript {
  async run(client: ScriptClient, keys: RedisLockKeys, tokens: readonly string[]): Promise<ShapedHeartbeatResult> {
    const reply = (await this.script.run(client, [...keysOf(keys), this.settings.heartbeatMs, ...this.passOn, ...tokens])) as unknown[];
    const count = Number(reply[6]);
    const granted: { token: string; fence: number; px: number }[] = [];
    for (let i = 0; i < count; i++) {
      const at = 7 + i * 3;
      granted.push({ token: String(reply[at]), fence: Number(reply[at + 1]), px: Number(reply[at + 2]) });
    }
    return {
      pttl: Number(reply[0]),
      handed: handOffOf(reply[1], reply[2], reply[3], reply[4], reply[5]),
      granted,
      missing: reply.slice(7 + count * 3) as string[],
    };
  }
}
