-- Renew or extend a lease: only while the key still belongs to this token.
--
-- KEYS: lock
-- ARGV: token, px
-- Reply: 1 when the lease now ends px from now, 0 when the key is no longer ours
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
