-- One process's heart-beat for its waiters of one key, and the slow safety check:
-- refreshes each waiter's place, passes a free key on (the holder's lease ran out,
-- or a hand-off message was missed) and reports who holds the key now.
--
-- KEYS: lock, queue, heart-beats
-- ARGV: heartbeatMs, hand-off lease cap, wake-up channel prefix, caller's session, token...
-- Reply: {owner or '', pttl, handed member, handed fence, handed px, missing token...}
--   missing: tokens no longer queued (granted, or dropped after missing their heart-beats)
local lock, queue, beats = KEYS[1], KEYS[2], KEYS[3]
local heartbeat, cap, channel, session = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local now = now_ms()
local missing = {}
local alive = 0
for i = 5, #ARGV do
  local token = ARGV[i]
  if redis.call('ZSCORE', queue, token) then
    redis.call('ZADD', beats, now + heartbeat, token)
    alive = alive + 1
  else
    missing[#missing + 1] = token
  end
end
if alive > 0 then
  redis.call('PEXPIRE', queue, heartbeat * 2)
  redis.call('PEXPIRE', beats, heartbeat * 2)
end

local owner = redis.call('GET', lock)
local h_member, h_fence, h_px = '', 0, 0
if not owner then
  local handed = grant_next(lock, queue, beats, now, cap, channel, session)
  if handed then
    owner = handed[1]
    h_member, h_fence, h_px = handed[1], handed[2], handed[3]
  end
end
local reply = {owner or '', redis.call('PTTL', lock), h_member, h_fence, h_px}
for i = 1, #missing do reply[#reply + 1] = missing[i] end
return reply
