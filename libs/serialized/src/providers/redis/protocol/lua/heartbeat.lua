-- One process's heart-beat for its waiters of one key, (the "safety check" is this script):
-- refreshes each waiter's place, passes a free key on (the holder's lease ran out,
-- or a hand-off message was missed) and reports who holds the key now.
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes (shaped.lua)
-- ARGV: heartbeatMs, hand-off lease cap, wake-up channel prefix, caller's session,
--       tokens per block, token...
-- Reply: {owner or '', pttl, handed member, handed fence, handed px, handed last,
--         handed floor, owner fence, owner last, owner floor, missing token...}
--   owner fence/last/floor: when the owner is one of the tokens asked about (handed
--   the key by a message this process missed, or has not read yet), the block that
--   hand-off reserved, as the lock key's value names it, else 0. The same block
--   whichever of the message and this reply the process reads first, so a grant has
--   one fencing token, the one the value names.
--   missing: tokens no longer queued (granted, or dropped after missing their heart-beats)
local lock, queue, beats, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local holders, shapes = KEYS[5], KEYS[6]
local heartbeat, cap, channel, session, block = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local now = now_ms()
local missing = {}
local alive = 0
for i = 6, #ARGV do
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

local owner = lock_owner(lock)
local h_member, h_fence, h_px, h_last, h_floor = '', 0, 0, 0, 0
if not owner then
  local handed = pass_on(lock, queue, beats, holders, shapes, now, cap, channel, session, counter, block)
  if handed then
    owner = handed[1]
    h_member, h_fence, h_px, h_last, h_floor = handed[1], handed[2], handed[3], handed[4], handed[5]
  end
end
local o_fence, o_last, o_floor = 0, 0, 0
if owner and owner ~= h_member then
  for i = 6, #ARGV do
    if ARGV[i] == owner then
      o_fence = tonumber(fence_of(redis.call('GET', lock)))
      o_last = o_fence + block - 1
      o_floor = remote_floor(queue, session, FLOOR_WINDOW, true)
      break
    end
  end
end
local reply = {owner or '', holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor, o_fence, o_last, o_floor}
for i = 1, #missing do reply[#reply + 1] = missing[i] end
return reply
