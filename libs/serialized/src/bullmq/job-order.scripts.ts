import { LuaScript } from './lua-script.runner';

/**
 * The scripts behind the per-key order of BullMQ jobs, read once per process.
 * Immutable: every app in the process shares the same text, never any state.
 */
export const JOB_ORDER_SCRIPTS = Object.freeze({
  enter: LuaScript.load('enter-job.lua'),
  leave: LuaScript.load('leave-job.lua'),
});
