import path from 'node:path';
import { LuaScript } from '../internal/lua.script';

const LUA_DIR = path.join(__dirname, 'lua');
const COMMON = LuaScript.load(LUA_DIR, 'tick-common', 0).source;

/**
 * The scripts behind the Redis tick records, read once per process. Immutable:
 * every app in the process shares the same text, never any state.
 */
export const TICK_SCRIPTS = Object.freeze({
  /** KEYS: record. ARGV: tick, leaseMs, owner, maxAheadMs, retentionMs. */
  claim: LuaScript.load(LUA_DIR, 'claim-tick', 1, COMMON),
  /** KEYS: record. ARGV: owner, leaseMs, retentionMs. */
  renew: LuaScript.load(LUA_DIR, 'renew-tick', 1, COMMON),
  /** KEYS: record. ARGV: owner. */
  finish: LuaScript.load(LUA_DIR, 'finish-tick', 1, COMMON),
});
