import path from 'node:path';
import { LuaScript } from '../../../internal/lua.script';
import { AcquireScript } from './acquire.script';
import { HeartbeatScript } from './heartbeat.script';
import { ExtendScript } from './extend.script';
import type { HandOffSettings } from './hand-off.reply';
import { LeaveScript } from './leave.script';
import { ReleaseScript } from './release.script';

/** Where the `.lua` files live (copied next to the compiled code by the build). */
const SCRIPTS_DIR = path.join(__dirname, 'lua');

/**
 * The provider's scripts, read once from their files, each behind a typed gateway
 * (arguments in, decoded reply out). Those that can pass a key on share
 * `common.lua` (the hand-off), prepended to them.
 */
export class RedisScripts {
  readonly acquire: AcquireScript;
  readonly release: ReleaseScript;
  readonly extend: ExtendScript;
  readonly leave: LeaveScript;
  readonly heartbeat: HeartbeatScript;

  constructor(settings: HandOffSettings, dir: string = SCRIPTS_DIR) {
    const common = LuaScript.load(dir, 'common', 0).source;
    this.acquire = new AcquireScript(LuaScript.load(dir, 'acquire', 4, common), settings);
    this.release = new ReleaseScript(LuaScript.load(dir, 'release', 4, common), settings);
    this.leave = new LeaveScript(LuaScript.load(dir, 'leave', 4, common), settings);
    this.heartbeat = new HeartbeatScript(LuaScript.load(dir, 'heartbeat', 4, common), settings);
    this.extend = new ExtendScript(LuaScript.load(dir, 'extend', 1));
  }
}
