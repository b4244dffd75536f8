-- Acquire in one round trip: take the key when it is free and nobody waits,
-- otherwise (mode "wait") take a place in the global FIFO queue.
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes (same slot
--       as the lock in Cluster; the last two: shaped.lua)
-- ARGV: token, leaseMs, mode ("wait" | "try"), heartbeatMs, hand-off lease cap,
--       wake-up channel prefix, caller's session, tokens per block
-- Reply: {status, fence, pttl, handed member, handed fence, handed px, handed last,
--         handed floor, last, floor}
--   status  1  granted: fence is its fencing token (the first of a block ending at
--              last), pttl its lease
--           0  queued: fence is its place in the queue, pttl what is left of the
--              holder's lease; floor, when the holder is of the caller's session,
--              the place of the first waiter of another session (0: none; -1: not
--              asked, or not among the first 64)
--          -1  busy (mode "try": held or waited for)
--           2  this token already holds the key (the call was sent twice)
--   handed: a waiter the call passed the free key to on its way ('' when none)
-- Queued behind a holder of another process: that process is told by a message
-- "<owner> <place>" on its channel (its riders stay ahead of this waiter only while it
-- has not heard); so is the process of the waiter it queued behind, when that is
-- another process again ("<waiter> <place>").
local lock, queue, beats, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local holders, shapes = KEYS[5], KEYS[6]
local token, lease, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local block = tonumber(ARGV[8])

if redis.call('EXISTS', lock, queue, holders) == 0 then
  local fence = next_fence(counter, block)
  redis.call('SET', lock, lock_value(token, fence), 'PX', lease)
  return {1, fence, lease, '', 0, 0, 0, 0, fence + block - 1, 0}
end
local owner = lock_owner(lock)
if owner == token then return {2, 0, redis.call('PTTL', lock), '', 0, 0, 0, 0, 0, -1} end
local place = redis.call('ZSCORE', queue, token)
if place then return {0, tonumber(place), redis.call('PTTL', lock), '', 0, 0, 0, 0, 0, -1} end

local heartbeat, cap, channel, session = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
local now = now_ms()
local h_member, h_fence, h_px, h_last, h_floor = '', 0, 0, 0, 0
if not owner then
  -- Free, but others arrived first (the holder's lease ran out, or a waiter left):
  -- the first live one gets it; with none alive, the key is ours. Shaped holders
  -- (shaped.lua) keep it from a plain caller.
  local handed = pass_on(lock, queue, beats, holders, shapes, now, cap, channel, session, counter, block)
  if not handed and redis.call('EXISTS', queue, holders) == 0 then
    local fence = next_fence(counter, block)
    redis.call('SET', lock, lock_value(token, fence), 'PX', lease)
    return {1, fence, lease, '', 0, 0, 0, 0, fence + block - 1, 0}
  end
  if handed then
    h_member, h_fence, h_px, h_last, h_floor = handed[1], handed[2], handed[3], handed[4], handed[5]
    owner = h_member
  end
end
if mode ~= 'wait' then return {-1, 0, holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor, 0, -1} end

local fence = next_fence(counter)
-- The waiter it queues behind, if of another process (and not of the holder's, which
-- the notice below reaches): its process may be letting new waiters of its own ride
-- on that place (see local-handoff/tenure.registry.ts) and learns that one of another process now
-- waits behind it.
local tail = redis.call('ZRANGE', queue, -1, -1)[1]
redis.call('ZADD', queue, fence, token)
redis.call('ZADD', beats, now + heartbeat, token)
redis.call('PEXPIRE', queue, heartbeat * 2)
redis.call('PEXPIRE', beats, heartbeat * 2)
local floor = -1
local owner_session = owner and string.match(owner, '^([^:]+):')
if tail then
  local tail_session = string.match(tail, '^([^:]+):')
  if tail_session ~= session and tail_session ~= owner_session then
    redis.call('PUBLISH', channel .. tail_session, tail .. ' ' .. string.format('%.0f', fence))
  end
end
if owner_session == session then
  -- A short look (every queued waiter of the holder's process pays for it); -1 when
  -- it sees only the process's own: the holder's process learns nothing from it.
  floor = remote_floor(queue, session, 64, false)
elseif owner_session then
  -- The holder's process may be serving waiters of its own that have no place here
  -- (riders, see local-handoff/tenure.registry.ts): it learns that a waiter of another process now
  -- waits ("<owner> <place>").
  redis.call('PUBLISH', channel .. owner_session, owner .. ' ' .. string.format('%.0f', fence))
end
return {0, fence, holding_pttl(lock, holders, now), h_member, h_fence, h_px, h_last, h_floor, 0, floor}
