-- Prepended to enter-job.lua and leave-job.lua (Redis scripts cannot include one
-- another). Both take the prefix of the queue's job hashes as ARGV[1].
local rcall = redis.call
local jobPrefix = ARGV[1]

-- A job that finished for good (or was removed), e.g. failed by the stalled
-- checker without leaving: it no longer holds its key.
local function finished(id)
  if rcall("EXISTS", jobPrefix .. id) == 0 then return true end
  if rcall("ZSCORE", jobPrefix .. "completed", id) then return true end
  if rcall("ZSCORE", jobPrefix .. "failed", id) then return true end
  return false
end
