-- Release: only the owner's token may; the key goes straight to the first live
-- waiter (one round trip for the hand-off), or is deleted when nobody waits.
--
-- KEYS: lock, queue, heart-beats
-- ARGV: token, hand-off lease cap, wake-up channel prefix, caller's session
-- Reply: {0} not ours (already released, or lost); {1} released, nobody waits;
--        {2, member, fence, px} passed to that waiter
local lock, queue, beats, token = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
if redis.call('GET', lock) ~= token then return {0} end
if redis.call('EXISTS', queue) == 1 then
  local handed = grant_next(lock, queue, beats, now_ms(), tonumber(ARGV[2]), ARGV[3], ARGV[4])
  if handed then return {2, handed[1], handed[2], handed[3]} end
end
redis.call('DEL', lock)
return {1}
