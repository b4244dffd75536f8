-- Prepended to every script that can pass a key on (acquire, release, leave, heartbeat),
-- after lock-value.lua.
--
-- Layout of one lock (all keys share the hash tag {<key>}, so they live in one
-- Cluster slot):
--   <prefix>:{<key>}      string  "<owner token> <fencing token>" of the holder, expiring
--                                 with its lease (lock-value.lua)
--   <prefix>:{<key>}:q    zset    waiters by arrival; score = fencing token drawn on arrival
--   <prefix>:{<key>}:hb   zset    waiters' heart-beats; score = server time (ms) until which
--                                 the waiter counts as alive
-- An owner token is "<session>:<leaseMs>:<unique>": the session names the process's
-- wake-up channel, the lease bounds what a hand-off grants.
--
-- Fencing: whoever gets the key from Redis reserves a block of tokens
-- with one INCRBY ("block" in ARGV): it uses the first, and its process may hand the
-- key to its own next waiters in-process with the following ones, so every holder,
-- local or not, has a token greater than the one before. Queue scores are drawn from
-- the same counter on arrival: they order the waiters, they are not tokens.
-- The server's clock, so that no client clock matters. Scripts read it before their
-- first write: with effects replication (the default from Redis 5 on, the only mode
-- from 7 on) a write may follow TIME; the uncontended paths never need the clock.
local function now_ms()
  redis.replicate_commands()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The next fencing token. A counter INCR has to create (first use, or lost in a
-- restart without persistence or a fail-over) starts from the server clock in
-- microseconds rather than from 1, so tokens keep increasing across such a loss as
-- long as the clock moves forward (2^53 us is in the year 2255).
-- With `count` > 1 the caller reserves tokens fence .. fence + count - 1.
local function next_fence(counter, count)
  count = count or 1
  local last = redis.call('INCRBY', counter, count)
  if last == count then
    redis.replicate_commands()
    local t = redis.call('TIME')
    last = tonumber(t[1]) * 1000000 + tonumber(t[2]) + count - 1
    redis.call('SET', counter, string.format('%.0f', last))
  end
  return last - count + 1
end

-- The arrival place of the first waiter of another session than `session` (0: none),
-- looking at the first `window` places; when all of those are the session's own, the
-- last of them with `capped` (waiters of the session before it are surely ahead of
-- any other's), else -1 (unknown).
local FLOOR_WINDOW = 256
local function remote_floor(queue, session, window, capped)
  local entries = redis.call('ZRANGE', queue, 0, window - 1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    if string.match(entries[i], '^([^:]+):') ~= session then return tonumber(entries[i + 1]) end
  end
  if #entries >= window * 2 then
    if capped then return tonumber(entries[#entries]) end
    return -1
  end
  return 0
end

-- Hands the free key to the first waiter that still heart-beats, dropping the dead
-- ones in front of it. The new owner already holds the key when it hears of it;
-- its lease is capped at the heart-beat timeout, so a waiter that died just now
-- blocks the key for that long at most (it renews to its full lease once it runs).
-- Waiters of the calling process are told by the reply, the others by a message on
-- their process's channel. The new owner gets a fresh block of `block` tokens and the
-- place of the first waiter of another process (its local hand-offs stay behind it).
-- Returns {member, fence, px, last token of the block, floor} or nil.
local function grant_next(lock, queue, beats, now, cap, channel, session, counter, block)
  while true do
    -- Taken off the queue whether alive or not (one command: ZPOPMIN, Redis 5+).
    local head = redis.call('ZPOPMIN', queue)
    if #head == 0 then return nil end
    local member = head[1]
    local alive_until = tonumber(redis.call('ZSCORE', beats, member) or '0')
    redis.call('ZREM', beats, member)
    local owner_session, lease = string.match(member, '^([^:]+):(%d+):')
    if lease and alive_until >= now then
      local px = math.min(tonumber(lease), cap)
      local fence = next_fence(counter, block)
      local floor = remote_floor(queue, owner_session, FLOOR_WINDOW, true)
      redis.call('SET', lock, lock_value(member, fence), 'PX', px)
      if owner_session ~= session then
        redis.call('PUBLISH', channel .. owner_session, member .. ' ' .. string.format('%.0f', fence) .. ' ' .. px
          .. ' ' .. string.format('%.0f', fence + block - 1) .. ' ' .. string.format('%.0f', floor))
      end
      return {member, fence, px, fence + block - 1, floor}
    end
  end
end
