import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a Lua script needs from a Redis client: an ioredis `Redis` or `Cluster`,
 * or BullMQ's proxy over one (its default connection).
 */
export interface ScriptClient {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/**
 * One Lua script, read once from its `.lua` file (the build copies them next to
 * the compiled code): sent by SHA (`EVALSHA`), and by body only when the server
 * does not know it yet (`NOSCRIPT`: first use, a restarted server, a fail-over, a
 * new Cluster node), which also caches it there for the next call. It keeps no
 * per-client state and never adds commands to a client it does not own.
 */
export class LuaScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly source: string,
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Reads `<dir>/<name>.lua`. `prelude` (shared functions) goes in front of it:
   * Redis scripts cannot include one another.
   */
  static load(dir: string, name: string, numberOfKeys: number, prelude?: string): LuaScript {
    const body = readFileSync(path.join(dir, `${name}.lua`), 'utf8');
    return new LuaScript(name, prelude === undefined ? body : `${prelude}\n${body}`, numberOfKeys);
  }

  /**
   * Runs the script: its `numberOfKeys` keys first, then its arguments; a script
   * over a varying number of keys (a key set) says how many this call passes.
   */
  run(client: ScriptClient, keysAndArgs: readonly (string | number)[], numberOfKeys = this.numberOfKeys): Promise<unknown> {
    // Not an async function: on the lock hot path this saves a promise per call.
    return client.evalsha(this.sha, numberOfKeys, ...keysAndArgs).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return client.eval(this.source, numberOfKeys, ...keysAndArgs);
    });
  }
}

/** Whether `client` can run scripts the way {@link LuaScript} does. */
export function isScriptClient(client: unknown): client is ScriptClient {
  const candidate = client as Partial<ScriptClient> | null;
  return typeof candidate?.evalsha === 'function' && typeof candidate.eval === 'function';
}

function isNoScript(error: unknown): boolean {
  return String((error as Error | undefined)?.message ?? error).startsWith('NOSCRIPT');
}
