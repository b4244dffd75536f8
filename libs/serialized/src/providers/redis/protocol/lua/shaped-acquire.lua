-- A shaped caller (`concurrency` > 1 or `shared`, shaped.lua) asks for the key: it
-- holds it at once beside the holders when nobody is queued and they admit it,
-- otherwise (mode "wait") it takes a place in the key's one queue, in global order
-- of arrival, behind plain and shaped waiters alike.
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes
-- ARGV: token, leaseMs, mode ("wait" | "try"), heartbeatMs, hand-off lease cap,
--       wake-up channel prefix, caller's session, tokens per block, limit (0: shared)
-- Reply: {status, fence, pttl, handed member, handed fence, handed px, handed last, handed floor}
--   status 1 granted (fence: its fencing token, pttl: its lease); 0 queued (fence: its
--   place, pttl: what is left of the holding); -1 busy (mode "try"); 2 the call was
--   sent twice (it holds or waits already); handed: a plain waiter the call passed a
--   free key to on its way ('' when none).
local lock, queue, beats, counter, holders, shapes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, lease, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local heartbeat, cap, channel, session, block = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], tonumber(ARGV[8])
local limit = tonumber(ARGV[9])
local now = now_ms()

if redis.call('ZSCORE', holders, token) or redis.call('ZSCORE', queue, token) then
  return {2, 0, holding_pttl(lock, holders, now), '', 0, 0, 0, 0}
end
local h_member, h_fence, h_px, h_last, h_floor = '', 0, 0, 0, 0
-- The plain holder's owner token: the value's first word (the value may carry more after a space).
local owner = redis.call('GET', lock)
if owner then owner = string.match(owner, '^(%S+)') end
if not owner then
  -- Whoever waits first is served first (a lapsed holder's place is freed here too).
  local handed, count, readers, smallest = pass_on(lock, queue, beats, holders, shapes, now, cap, channel, session, counter, block)
  if handed then
    h_member, h_fence, h_px, h_last, h_floor = handed[1], handed[2], handed[3], handed[4], handed[5]
    owner = h_member
  elseif redis.call('EXISTS', queue) == 0 then
    -- Nobody waits: the holders as pass_on left them (it looked just now) decide.
    if admits(count, readers, smallest, limit) then
      local fence = next_fence(counter, 1)
      redis.call('ZADD', holders, now + lease, token)
      redis.call('HSET', shapes, token, limit .. ':' .. string.format('%.0f', fence))
      keep_beside(holders, shapes, lease)
      return {1, fence, lease, '', 0, 0, 0, 0}
    end
  end
end
if mode ~= 'wait' then return {-1, 0, holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor} end

local fence = next_fence(counter)
local tail = redis.call('ZRANGE', queue, -1, -1)[1]
redis.call('ZADD', queue, fence, token)
redis.call('ZADD', beats, now + heartbeat, token)
redis.call('HSET', shapes, token, limit)
redis.call('PEXPIRE', queue, heartbeat * 2)
redis.call('PEXPIRE', beats, heartbeat * 2)
keep_beside(holders, shapes, heartbeat * 2)
local place = string.format('%.0f', fence)
-- As acquire.lua tells them: the process of the waiter it queued behind, and the
-- plain holder's process (this one's own too: its riders and local hand-offs must
-- not pass a shaped waiter either).
local owner_session = owner and string.match(owner, '^([^:]+):')
if tail then
  local tail_session = string.match(tail, '^([^:]+):')
  if tail_session ~= session and tail_session ~= owner_session then
    redis.call('PUBLISH', channel .. tail_session, tail .. ' ' .. place)
  end
end
if owner_session then redis.call('PUBLISH', channel .. owner_session, owner .. ' ' .. place) end
return {0, fence, holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor}
