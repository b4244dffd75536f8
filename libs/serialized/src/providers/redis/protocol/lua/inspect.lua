-- Read-only: what one lock looks like now (LockService.inspect). Writes nothing,
-- and its work is bounded whatever the queue's length: three O(1) reads and a look
-- at the first `window` places of the queue.
--
-- KEYS: lock, queue
-- ARGV: caller's session, window
-- Reply: {owner token or '', PTTL of the lock, places in the queue,
--         places of the caller's session among the first `window`}
local owner = redis.call('GET', KEYS[1]) or ''
local pttl = redis.call('PTTL', KEYS[1])
local places = redis.call('ZCARD', KEYS[2])
local mine = 0
if places > 0 then
  local prefix = ARGV[1] .. ':'
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)) do
    if string.sub(member, 1, #prefix) == prefix then mine = mine + 1 end
  end
end
return {owner, pttl, places, mine}
