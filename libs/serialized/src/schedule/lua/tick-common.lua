-- Shared by the tick scripts (prepended to each: Redis scripts cannot include one another).
-- The server's clock in milliseconds: every lease is judged on it, never on an instance's.
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers as Redis stores them (no exponent however large).
local function int(n)
  return string.format('%.0f', n)
end
