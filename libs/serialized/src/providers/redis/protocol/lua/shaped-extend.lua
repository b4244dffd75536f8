-- Renew or extend a shaped holder's lease: only while it is still a holder and its
-- lease has not lapsed (a lapsed place may have been given to a waiter already).
--
-- KEYS: shaped holders, shapes
-- ARGV: token, px
-- Reply: 1 when the lease now ends px from now, 0 when the place is no longer the token's
local holders, shapes, token, px = KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local until_ms = redis.call('ZSCORE', holders, token)
if not until_ms or tonumber(until_ms) < now then return 0 end
redis.call('ZADD', holders, 'XX', now + px, token)
keep_beside(holders, shapes, px)
return 1
