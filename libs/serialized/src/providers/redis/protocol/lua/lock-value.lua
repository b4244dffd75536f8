-- Prepended to every script that reads or writes a lock key (Redis scripts cannot
-- include one another): the one place that knows what its value looks like.
--
-- A lock key holds "<owner token> <fencing token>". The owner token says whose the
-- key is: every owner check compares it, and only it (an owner token never holds a
-- space). The fencing token is the holder's as Redis last heard of it, there for
-- LockService.inspect to list a holder of another process (inspect.lua); nothing
-- decides on it. It is written by every grant (acquire.lua, `grant_next` in
-- common.lua), by every renewal or extension (extend.lua) and by a release that
-- keeps the key (release.lua); heartbeat.lua reads it back for a grant whose
-- message was missed. A local hand-off within a block sends nothing: until the new
-- holder's first renewal the value names the token of the holder before it
-- (docs/observability.md, "Who holds my key?").

-- The value of a key held by `token` with fencing token `fence` (a number, or the
-- decimal string a caller sent).
local function lock_value(token, fence)
  if type(fence) == 'number' then fence = string.format('%.0f', fence) end
  return token .. ' ' .. fence
end

-- The owner token in a lock key's value (false when the key is absent, as GET says).
local function owner_of(value)
  if not value then return false end
  return string.match(value, '^[^ ]+') or value
end

-- The fencing token in a lock key's value, as a decimal string ('' when absent).
local function fence_of(value)
  if not value then return '' end
  return string.match(value, ' (%d+)$') or ''
end

-- Whose the lock is now (false: nobody's).
local function lock_owner(lock)
  return owner_of(redis.call('GET', lock))
end
