-- A key set at once, in one round trip: every key taken when each is free and nobody
-- waits for it or holds it beside others, otherwise none (nothing is written).
--
-- KEYS: per key, in canonical order: lock, queue, shaped holders, fencing counter
--       (on a standalone server any keys; in a Cluster, keys of one slot only)
-- ARGV: leaseMs, tokens per block, then per key its owner token
-- Reply: {1, fence, last, fence, last, ...}  granted: each key's fencing token, the
--                                            first of a block ending at last
--        {-1}  busy: a key is held, waited for or held beside others
--        {2}   the first key is already this set's (the call was sent twice)
local lease, block = tonumber(ARGV[1]), tonumber(ARGV[2])
local count = #KEYS / 4

for i = 0, count - 1 do
  local lock = KEYS[i * 4 + 1]
  if redis.call('EXISTS', lock, KEYS[i * 4 + 2], KEYS[i * 4 + 3]) ~= 0 then
    if lock_owner(lock) == ARGV[3 + i] then return {2} end
    return {-1}
  end
end
local reply = {1}
for i = 0, count - 1 do
  local fence = next_fence(KEYS[i * 4 + 4], block)
  redis.call('SET', KEYS[i * 4 + 1], lock_value(ARGV[3 + i], fence), 'PX', lease)
  reply[#reply + 1] = fence
  reply[#reply + 1] = fence + block - 1
end
return reply
