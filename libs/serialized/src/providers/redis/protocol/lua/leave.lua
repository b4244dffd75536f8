-- A waiter gives up (timeout, abort, shutdown, a failed call): it leaves the queue,
-- and when the key was handed to it in the meantime, or is free with others
-- waiting, the key passes on.
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes (shaped.lua)
-- ARGV: token, hand-off lease cap, wake-up channel prefix, caller's session, tokens per block
-- Reply: {0} nothing to pass on; {1} released; {2, member, fence, px, last, floor} passed to that waiter
local lock, queue, beats, counter, token = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
local now = now_ms()
redis.call('ZREM', queue, token)
redis.call('ZREM', beats, token)
local owner = lock_owner(lock)
if owner and owner ~= token then return {0} end
local handed = pass_on(lock, queue, beats, KEYS[5], KEYS[6], now, tonumber(ARGV[2]), ARGV[3], ARGV[4], counter, tonumber(ARGV[5]))
if handed then return {2, handed[1], handed[2], handed[3], handed[4], handed[5]} end
if owner then
  redis.call('DEL', lock)
  return {1}
end
return {0}
