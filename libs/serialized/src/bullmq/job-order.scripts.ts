import path from 'node:path';
import { LuaScript } from '../internal/lua.script';

const LUA_DIR = path.join(__dirname, 'lua');
const COMMON = LuaScript.load(LUA_DIR, 'job-common', 0).source;

/**
 * The scripts behind the per-key order of BullMQ jobs, read once per process.
 * Immutable: every app in the process shares the same text, never any state.
 */
export const JOB_ORDER_SCRIPTS = Object.freeze({
  /** KEYS: active list, sequence, order set. */
  enter: LuaScript.load(LUA_DIR, 'enter-job', 3, COMMON),
  /** KEYS: order set. */
  leave: LuaScript.load(LUA_DIR, 'leave-job', 1, COMMON),
});
