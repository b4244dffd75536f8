-- A shaped caller lets go (its holder releases) or gives up its place (timeout,
-- abort, shutdown, a grant it could not use): it leaves the holders, the queue and
-- the shapes, and whoever waits first gets what it freed (shaped.lua's pass_on).
--
-- KEYS: lock, queue, heart-beats, fencing counter, shaped holders, shapes
-- ARGV: token, hand-off lease cap, wake-up channel prefix, caller's session, tokens per block
-- Reply: {held, 0} or {held, 1, member, fence, px, last, floor} (a plain waiter handed the key);
--   held: 1 when the token held the key with its lease running, else 0
local lock, queue, beats, counter, holders, shapes = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token = ARGV[1]
local now = now_ms()
local until_ms = tonumber(redis.call('ZSCORE', holders, token) or '-1')
local held = 0
if until_ms >= now then held = 1 end
redis.call('ZREM', holders, token)
redis.call('ZREM', queue, token)
redis.call('ZREM', beats, token)
redis.call('HDEL', shapes, token)
if redis.call('EXISTS', lock) == 1 then return {held, 0} end
local handed = pass_on(lock, queue, beats, holders, shapes, now, tonumber(ARGV[2]), ARGV[3], ARGV[4], counter, tonumber(ARGV[5]))
if handed then return {held, 1, handed[1], handed[2], handed[3], handed[4], handed[5]} end
return {held, 0}
