-- Renews a running claim's lease while the record is still its owner's.
-- KEYS[1] the name's record; ARGV[1] owner, ARGV[2] leaseMs, ARGV[3] retentionMs
-- Returns 1 when renewed, 0 when the record is someone else's (or gone).
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'until', int(server_ms() + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
