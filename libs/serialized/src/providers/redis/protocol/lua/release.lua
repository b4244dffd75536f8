-- Release: only the owner's token may; the key goes straight to the first live
-- waiter (one round trip for the hand-off), or is deleted when nobody waits.
-- Waiters its process served in-process meanwhile (local hand-offs under this
-- token) leave the queue first.
--
-- With `keep` > 0 (its process has riders waiting: waiters without a place of their
-- own, see local-handoff/tenure.registry.ts, which bounds them to one block) the key stays the
-- token's for at least `keep` ms more, with a fresh block of tokens for the riders, and the
-- reply says where the first waiter of another process is (0: none). The value then
-- names (lock-value.lua) `holder` when given: a refill, sent while that holder of the
-- process still holds the key; else the block's first token, the next holder's.
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes (shaped.lua)
-- ARGV: token, hand-off lease cap, wake-up channel prefix, caller's session,
--       tokens per block, keep, holder (fencing token, decimal; '' none), served token...
-- Reply: {0} not ours (already released, or lost); {1} released, nobody waits;
--        {2, member, fence, px, last, floor} passed to that waiter;
--        {3, '', fence, keep, last, floor} kept with a new block
local lock, queue, beats, counter, token = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
-- Served: their places go whether or not the key is still ours (a lost lease too).
if #ARGV > 7 then
  redis.call('ZREM', queue, unpack(ARGV, 8))
  redis.call('ZREM', beats, unpack(ARGV, 8))
end
if lock_owner(lock) ~= token then return {0} end
local block, keep = tonumber(ARGV[5]), tonumber(ARGV[6])
if keep > 0 then
  local fence = next_fence(counter, block)
  local holder = ARGV[7]
  if holder == '' then holder = fence end
  redis.call('SET', lock, lock_value(token, holder), 'PX', keep)
  local floor = 0
  if redis.call('EXISTS', queue) == 1 then floor = remote_floor(queue, ARGV[4], FLOOR_WINDOW, true) end
  return {3, '', fence, keep, fence + block - 1, floor}
end
if redis.call('EXISTS', queue) == 1 then
  local handed = pass_on(lock, queue, beats, KEYS[5], KEYS[6], now_ms(), tonumber(ARGV[2]), ARGV[3], ARGV[4], counter, block)
  if handed then return {2, handed[1], handed[2], handed[3], handed[4], handed[5]} end
end
redis.call('DEL', lock)
return {1}
