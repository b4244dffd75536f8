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
 * A Lua script read once from its `.lua` file and run with EVALSHA, falling back
 * to EVAL (which caches it on the server) when the server does not know it yet,
 * e.g. after a restart or on a Cluster node seen for the first time. It keeps no
 * per-client state and never adds commands to a client it does not own.
 */
export class LuaScript {
  readonly sha: string;

  private constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Reads `lua/<file>` next to this module (the build copies `.lua` files along). */
  static load(file: string): LuaScript {
    return new LuaScript(file, readFileSync(path.join(__dirname, 'lua', file), 'utf8'));
  }

  async run(client: ScriptClient, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/** Whether `client` can run scripts the way {@link LuaScript} does. */
export function isScriptClient(client: unknown): client is ScriptClient {
  const candidate = client as Partial<ScriptClient> | null;
  return typeof candidate?.evalsha === 'function' && typeof candidate.eval === 'function';
}
