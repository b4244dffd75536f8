-- Prepended to every script that can pass a key on (acquire, release, leave, check).
--
-- Layout of one lock (all keys share the hash tag {<key>}, so they live in one
-- Cluster slot):
--   <prefix>:{<key>}      string  owner token of the holder, expiring with its lease
--   <prefix>:{<key>}:q    zset    waiters by arrival; score = fencing token drawn on arrival
--   <prefix>:{<key>}:hb   zset    waiters' heart-beats; score = server time (ms) until which
--                                 the waiter counts as alive
-- An owner token is "<session>:<leaseMs>:<unique>": the session names the process's
-- wake-up channel, the lease bounds what a hand-off grants.

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
local function next_fence(counter)
  local fence = redis.call('INCR', counter)
  if fence == 1 then
    redis.replicate_commands()
    local t = redis.call('TIME')
    fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', counter, string.format('%.0f', fence))
  end
  return fence
end

-- Hands the free key to the first waiter that still heart-beats, dropping the dead
-- ones in front of it. The new owner already holds the key when it hears of it;
-- its lease is capped at the heart-beat timeout, so a waiter that died just now
-- blocks the key for that long at most (it renews to its full lease once it runs).
-- Waiters of the calling process are told by the reply, the others by a message on
-- their process's channel. Returns {member, fence, px} or nil.
local function grant_next(lock, queue, beats, now, cap, channel, session)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
    if #head == 0 then return nil end
    local member = head[1]
    local fence = tonumber(head[2])
    local alive_until = tonumber(redis.call('ZSCORE', beats, member) or '0')
    redis.call('ZREM', queue, member)
    redis.call('ZREM', beats, member)
    local owner_session, lease = string.match(member, '^([^:]+):(%d+):')
    if lease and alive_until >= now then
      local px = math.min(tonumber(lease), cap)
      redis.call('SET', lock, member, 'PX', px)
      if owner_session ~= session then
        redis.call('PUBLISH', channel .. owner_session, member .. ' ' .. string.format('%.0f', fence) .. ' ' .. px)
      end
      return {member, fence, px}
    end
  end
end
