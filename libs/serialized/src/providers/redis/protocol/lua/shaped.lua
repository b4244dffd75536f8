-- Prepended (after common.lua) to every script that can pass a key on: holders of one
-- key beside each other (`concurrency` > 1, `shared`), docs/protocol.md "Several
-- holders of one key".
--
-- Two more keys of one lock (same hash tag, so the same Cluster slot):
--   <prefix>:{<key>}:h   zset  shaped holders; score = server time (ms) their lease ends
--   <prefix>:{<key>}:s   hash  shaped callers (queued or holding) -> "<limit>" while
--                              queued, "<limit>:<fencing token>" once granted; limit 0
--                              is shared (a reader)
-- A shaped waiter queues in the key's one queue (:q, with its heart-beat in :hb) beside
-- the plain ones, so the queue stays the global order of arrival. A plain (exclusive)
-- caller is a writer: it holds the lock string itself, never beside a shaped holder.
-- Shaped holders are granted one by one at Redis, each with a token of its own.

-- Keeps both keys of holders beside each other alive at least `ms` more (never
-- shortening either), the holders' set never expiring before the shapes: only a
-- script that finds a holder lapsed drops its shape, so a set gone first would leave a
-- dead holder's shape behind for as long as waiters' heart-beats keep the shapes alive
-- (test/redis/redis-holders.e2e-spec.ts, "a SIGKILLed reader's place frees"). Two PTTL
-- and at most two PEXPIRE: the set is kept for the longer of `ms` and what the shapes
-- have left once kept.
local function keep_beside(holders, shapes, ms)
  local left = redis.call('PTTL', shapes)
  if left == -1 or (left >= 0 and left < ms) then
    redis.call('PEXPIRE', shapes, ms)
    left = ms
  end
  if left < ms then left = ms end
  local pttl = redis.call('PTTL', holders)
  if pttl == -1 or (pttl >= 0 and pttl < left) then redis.call('PEXPIRE', holders, left) end
end

-- The limit (0: shared) in a shapes value ("<limit>" or "<limit>:<fencing token>"), nil for none.
local function limit_in(value)
  if not value then return nil end
  return tonumber(string.match(value, '^(%d+)'))
end

-- A queued or holding member's limit (0: shared), nil for a plain caller.
local function shape_of(shapes, member)
  return limit_in(redis.call('HGET', shapes, member))
end

-- The live shaped holders, after dropping those whose lease lapsed (their process
-- crashed or stalled): how many, whether they are readers, and the smallest limit
-- among them (a concurrency group holds fewer than 1000, so the look is bounded).
local function live_holders(holders, shapes, now)
  while true do
    local lapsed = redis.call('ZRANGEBYSCORE', holders, '-inf', '(' .. string.format('%.0f', now), 'LIMIT', 0, 500)
    if #lapsed == 0 then break end
    redis.call('ZREM', holders, unpack(lapsed))
    redis.call('HDEL', shapes, unpack(lapsed))
  end
  local first = redis.call('ZRANGE', holders, 0, 0)[1]
  if not first then return 0, false, 0 end
  -- Readers are held only beside readers: the first tells, and the count is all there is to know.
  if (shape_of(shapes, first) or 1) == 0 then return redis.call('ZCARD', holders), true, 0 end
  -- A group holds fewer than its smallest limit (at most 1000): all of them, and their
  -- limits in one HMGET, not one HGET each (bench row 8.redis.permits.commands: 59 -> 53
  -- commands per section at N = 4, with keep_beside's two PTTL fewer).
  local members = redis.call('ZRANGE', holders, 0, 999)
  local smallest = 1000
  for _, value in ipairs(redis.call('HMGET', shapes, unpack(members))) do
    local limit = limit_in(value) or 1
    if limit < smallest then smallest = limit end
  end
  return #members, false, smallest
end

-- Whether a caller of `limit` (0: shared) may hold beside `count` live holders:
-- nobody holds; readers beside readers; a group while it stays below its own limit
-- and every holder's (no mix lets in more than the smallest).
local function admits(count, readers, smallest, limit)
  if count == 0 then return true end
  if limit == 0 then return readers end
  return (not readers) and count < limit and count < smallest
end

-- What is left of the holding (ms): the plain holder's lease, else the shaped holder
-- whose lease ends first, else -2 (nobody holds). Waiters plan their heart-beat by it.
local function holding_pttl(lock, holders, now)
  local pttl = redis.call('PTTL', lock)
  if pttl >= 0 then return pttl end
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')
  if #first == 0 then return -2 end
  return math.max(0, tonumber(first[2]) - now)
end

-- Grants `member` (a queued shaped waiter, alive) the key beside the holders: a
-- fencing token of its own from the key's counter, a lease capped like a hand-off's,
-- and a message on its process's channel "<member> <fence> <px> <fence> 0".
local function grant_shaped(queue, beats, holders, shapes, member, limit, now, cap, channel, counter)
  redis.call('ZREM', queue, member)
  redis.call('ZREM', beats, member)
  local owner_session, lease = string.match(member, '^([^:]+):(%d+):')
  local px = math.min(tonumber(lease), cap)
  local fence = next_fence(counter, 1)
  local wire = string.format('%.0f', fence)
  redis.call('ZADD', holders, now + px, member)
  redis.call('HSET', shapes, member, limit .. ':' .. wire)
  keep_beside(holders, shapes, px)
  redis.call('PUBLISH', channel .. owner_session, member .. ' ' .. wire .. ' ' .. px .. ' ' .. wire .. ' 0')
end

-- The key has no plain holder (or its holder is letting go): the waiters at the head
-- of the queue get it in queue order while they may — a plain one alone once no
-- shaped holder is left (common.lua's grant_next, whose reply or message tells it),
-- shaped ones beside the holders while `admits` lets them. A waiter whose heart-beat
-- lapsed is dropped on the way. Returns grant_next's answer for a plain one, or nil
-- and then what `live_holders` would say now (count, readers, smallest): the caller
-- that finds the queue empty decides on it without looking again.
local function pass_on(lock, queue, beats, holders, shapes, now, cap, channel, session, counter, block)
  local count, readers, smallest = live_holders(holders, shapes, now)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then return nil, count, readers, smallest end
    local limit = shape_of(shapes, head)
    local alive_until = tonumber(redis.call('ZSCORE', beats, head) or '0')
    if alive_until < now then
      redis.call('ZREM', queue, head)
      redis.call('ZREM', beats, head)
      if limit then redis.call('HDEL', shapes, head) end
    elseif limit == nil then
      if count > 0 then return nil, count, readers, smallest end
      return grant_next(lock, queue, beats, now, cap, channel, session, counter, block)
    elseif admits(count, readers, smallest, limit) then
      redis.call('DEL', lock)
      grant_shaped(queue, beats, holders, shapes, head, limit, now, cap, channel, counter)
      if count == 0 then readers, smallest = limit == 0, limit end
      if limit > 0 and limit < smallest then smallest = limit end
      count = count + 1
    else
      return nil, count, readers, smallest
    end
  end
end
