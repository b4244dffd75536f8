import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Cluster, Redis } from 'ioredis';

/** Where the `.lua` files live (copied next to the compiled code by the build). */
const SCRIPTS_DIR = path.join(__dirname, 'scripts');

/**
 * One Lua script: sent by SHA (`EVALSHA`), and by body only when the server does
 * not know it yet (`NOSCRIPT`: first use, a restarted server, a fail-over, a new
 * Cluster node), which also loads it for the next call.
 */
export class RedisScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly lua: string,
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  run(client: Redis | Cluster, args: (string | number)[]): Promise<unknown> {
    return client.evalsha(this.sha, this.numberOfKeys, ...args).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return client.eval(this.lua, this.numberOfKeys, ...args);
    });
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * The provider's scripts, read once from their files. Those that can pass a key on
 * share `common.lua` (the hand-off), prepended to them: Redis scripts cannot
 * include one another.
 */
export class RedisScripts {
  readonly acquire: RedisScript;
  readonly release: RedisScript;
  readonly extend: RedisScript;
  readonly leave: RedisScript;
  readonly check: RedisScript;

  constructor(dir: string = SCRIPTS_DIR) {
    const read = (name: string): string => readFileSync(path.join(dir, `${name}.lua`), 'utf8');
    const common = read('common');
    const withCommon = (name: string, keys: number): RedisScript => new RedisScript(name, `${common}\n${read(name)}`, keys);
    this.acquire = withCommon('acquire', 4);
    this.release = withCommon('release', 3);
    this.leave = withCommon('leave', 3);
    this.check = withCommon('check', 3);
    this.extend = new RedisScript('extend', read('extend'), 1);
  }
}
