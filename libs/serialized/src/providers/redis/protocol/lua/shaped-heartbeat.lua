-- One process's heart-beat for its shaped waiters of one key: refreshes their
-- places, passes on what a lapsed holder left (shaped.lua's pass_on), and says which
-- of them hold the key already (a grant message this process missed).
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes
-- ARGV: heartbeatMs, hand-off lease cap, wake-up channel prefix, caller's session,
--       tokens per block, token...
-- Reply: {pttl, handed member, handed fence, handed px, handed last, handed floor,
--         granted count, (token, fence, px)..., missing token...}
--   pttl: what is left of the holding (-2: nobody holds); granted: tokens that hold
--   the key with their fencing token and what is left of their lease; missing: tokens
--   neither queued nor holding (dropped after missing their heart-beats)
local lock, queue, beats, counter, holders, shapes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local heartbeat, cap, channel, session, block = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local now = now_ms()
local alive = 0
for i = 6, #ARGV do
  if redis.call('ZSCORE', queue, ARGV[i]) then
    redis.call('ZADD', beats, now + heartbeat, ARGV[i])
    alive = alive + 1
  end
end
if alive > 0 then
  redis.call('PEXPIRE', queue, heartbeat * 2)
  redis.call('PEXPIRE', beats, heartbeat * 2)
  keep_beside(holders, shapes, heartbeat * 2)
end
local h_member, h_fence, h_px, h_last, h_floor = '', 0, 0, 0, 0
if redis.call('EXISTS', lock) == 0 then
  local handed = pass_on(lock, queue, beats, holders, shapes, now, cap, channel, session, counter, block)
  if handed then h_member, h_fence, h_px, h_last, h_floor = handed[1], handed[2], handed[3], handed[4], handed[5] end
end
local granted, missing = {}, {}
for i = 6, #ARGV do
  local token = ARGV[i]
  if not redis.call('ZSCORE', queue, token) then
    local until_ms = redis.call('ZSCORE', holders, token)
    local value = until_ms and redis.call('HGET', shapes, token)
    local fence = value and string.match(value, ':(%d+)$')
    if fence and tonumber(until_ms) > now then
      granted[#granted + 1] = token
      granted[#granted + 1] = fence
      granted[#granted + 1] = tonumber(until_ms) - now
    else
      missing[#missing + 1] = token
    end
  end
end
local reply = {holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor, #granted / 3}
for i = 1, #granted do reply[#reply + 1] = granted[i] end
for i = 1, #missing do reply[#reply + 1] = missing[i] end
return reply
