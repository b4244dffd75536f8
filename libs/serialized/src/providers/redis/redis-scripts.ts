import path from 'node:path';
import { LuaScript } from '../../internal/lua-script';

/** Where the `.lua` files live (copied next to the compiled code by the build). */
const SCRIPTS_DIR = path.join(__dirname, 'scripts');

/**
 * The provider's scripts, read once from their files. Those that can pass a key on
 * share `common.lua` (the hand-off), prepended to them.
 */
export class RedisScripts {
  readonly acquire: LuaScript;
  readonly release: LuaScript;
  readonly extend: LuaScript;
  readonly leave: LuaScript;
  readonly check: LuaScript;

  constructor(dir: string = SCRIPTS_DIR) {
    const common = LuaScript.load(dir, 'common', 0).source;
    this.acquire = LuaScript.load(dir, 'acquire', 4, common);
    this.release = LuaScript.load(dir, 'release', 3, common);
    this.leave = LuaScript.load(dir, 'leave', 3, common);
    this.check = LuaScript.load(dir, 'check', 3, common);
    this.extend = LuaScript.load(dir, 'extend', 1);
  }
}
