-- Claims a tick of one name (schedule/tick.store.ts): only a tick later than the
-- last claimed one, no earlier than maxAhead ahead of the server's clock, while no
-- run of the name is running within its lease.
-- KEYS[1] the name's record (a hash: tick, until, owner)
-- ARGV[1] tick (ms since the epoch), ARGV[2] leaseMs, ARGV[3] owner,
-- ARGV[4] maxAheadMs, ARGV[5] retentionMs (how long the record outlives its last write)
-- Returns {outcome, server ms}; outcome: claimed | already_run | clock_ahead | overlap.
local now = server_ms()
local tick = tonumber(ARGV[1])
local last = redis.call('HMGET', KEYS[1], 'tick', 'until')
if last[1] and tonumber(last[1]) >= tick then
  return {'already_run', int(now)}
end
if tick > now + tonumber(ARGV[4]) then
  return {'clock_ahead', int(now)}
end
if last[2] and tonumber(last[2]) > now then
  return {'overlap', int(now)}
end
redis.call('HSET', KEYS[1], 'tick', ARGV[1], 'until', int(now + tonumber(ARGV[2])), 'owner', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {'claimed', int(now)}
