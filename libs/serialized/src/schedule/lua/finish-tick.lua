-- Ends a run while the record is still its owner's: the next tick may be claimed at once.
-- KEYS[1] the name's record; ARGV[1] owner
-- Returns 1 when ended, 0 when the record is someone else's (or gone).
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'until', '0')
return 1
