-- Renew or extend a lease: only while the key still belongs to this token. The
-- value is written anew with the caller's fencing token (lock-value.lua): after a
-- local hand-off, the first renewal is where Redis learns the new holder's.
--
-- KEYS: lock
-- ARGV: token, px, the caller's fencing token (decimal)
-- Reply: 1 when the lease now ends px from now, 0 when the key is no longer ours
if lock_owner(KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], lock_value(ARGV[1], ARGV[3]), 'PX', ARGV[2])
  return 1
end
return 0
