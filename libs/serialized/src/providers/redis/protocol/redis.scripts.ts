import path from 'node:path';
import { LuaScript } from '../../../internal/lua.script';
import { AcquireScript } from './acquire.script';
import { AcquireSetScript } from './acquire-set.script';
import { HeartbeatScript } from './heartbeat.script';
import { ExtendScript } from './extend.script';
import type { HandOffSettings } from './hand-off.reply';
import { LeaveScript } from './leave.script';
import { ReleaseScript } from './release.script';
import { ShapedAcquireScript, ShapedExtendScript, ShapedHeartbeatScript, ShapedReleaseScript } from './shaped.scripts';

/** Where the `.lua` files live (copied next to the compiled code by the build). */
const SCRIPTS_DIR = path.join(__dirname, 'lua');

/**
 * The provider's scripts, read once from their files, each behind a typed gateway
 * (arguments in, decoded reply out). Every one reads a lock key's value through
 * `lock-value.lua`, prepended to it; those that can pass a key on also share
 * `common.lua` (the hand-off) and `shaped.lua` (holders beside each other),
 * prepended after it.
 */
export class RedisScripts {
  readonly acquire: AcquireScript;
  readonly acquireSet: AcquireSetScript;
  readonly release: ReleaseScript;
  readonly extend: ExtendScript;
  readonly leave: LeaveScript;
  readonly heartbeat: HeartbeatScript;
  readonly shapedAcquire: ShapedAcquireScript;
  readonly shapedRelease: ShapedReleaseScript;
  readonly shapedExtend: ShapedExtendScript;
  readonly shapedHeartbeat: ShapedHeartbeatScript;

  constructor(settings: HandOffSettings, dir: string = SCRIPTS_DIR) {
    const lockValue = lockValuePrelude(dir);
    const common = `${LuaScript.load(dir, 'common', 0, lockValue).source}\n${LuaScript.load(dir, 'shaped', 0).source}`;
    this.acquire = new AcquireScript(LuaScript.load(dir, 'acquire', 6, common), settings);
    this.acquireSet = new AcquireSetScript(LuaScript.load(dir, 'acquire-set', 0, common), settings);
    this.release = new ReleaseScript(LuaScript.load(dir, 'release', 6, common), settings);
    this.leave = new LeaveScript(LuaScript.load(dir, 'leave', 6, common), settings);
    this.heartbeat = new HeartbeatScript(LuaScript.load(dir, 'heartbeat', 6, common), settings);
    this.extend = new ExtendScript(LuaScript.load(dir, 'extend', 1, lockValue));
    this.shapedAcquire = new ShapedAcquireScript(LuaScript.load(dir, 'shaped-acquire', 6, common), settings);
    this.shapedRelease = new ShapedReleaseScript(LuaScript.load(dir, 'shaped-release', 6, common), settings);
    this.shapedExtend = new ShapedExtendScript(LuaScript.load(dir, 'shaped-extend', 2, common));
    this.shapedHeartbeat = new ShapedHeartbeatScript(LuaScript.load(dir, 'shaped-heartbeat', 6, common), settings);
  }
}

/** `lock-value.lua`, the functions that read and write a lock key's value: the prelude of every script that touches one. */
export function lockValuePrelude(dir: string = SCRIPTS_DIR): string {
  return LuaScript.load(dir, 'lock-value', 0).source;
}
