-- Read-only: what one lock looks like now (LockService.inspect). Writes nothing,
-- and its work is bounded whatever the queue's length: three O(1) reads, a look at
-- the first `window` places of the queue and at the first `window` holders beside
-- each other (shaped.lua's :h and :s; a lapsed one is listed until a script drops it).
--
-- KEYS: lock, queue, holders, shapes
-- ARGV: caller's session, window
-- Reply: {owner token or '', PTTL of the lock, places in the queue,
--         places of the caller's session among the first `window`,
--         the holder's fencing token as the value names it (lock-value.lua) or '',
--         shaped holders: a flat list of member, shape ("<limit>:<token>", limit 0
--         shared), ms of lease left (by the server's clock)}
local value = redis.call('GET', KEYS[1])
local owner = owner_of(value) or ''
local pttl = redis.call('PTTL', KEYS[1])
local places = redis.call('ZCARD', KEYS[2])
local window = tonumber(ARGV[2])
local mine = 0
if places > 0 then
  local prefix = ARGV[1] .. ':'
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, window - 1)) do
    if string.sub(member, 1, #prefix) == prefix then mine = mine + 1 end
  end
end
local shaped = {}
local held = redis.call('ZRANGE', KEYS[3], 0, window - 1, 'WITHSCORES')
if #held > 0 then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  for i = 1, #held, 2 do
    shaped[#shaped + 1] = held[i]
    shaped[#shaped + 1] = redis.call('HGET', KEYS[4], held[i]) or ''
    shaped[#shaped + 1] = math.floor(tonumber(held[i + 1]) - now)
  end
end
return {owner, pttl, places, mine, fence_of(value), shaped}
