--[[
  A job finished for good (completed, or failed with no retry left): it leaves
  the order of its key. Returns the new head, so that the caller can promote it
  if it is parked in the delayed set.

  KEYS[1] the order set of the job's key     <prefix>:<queue>:serialized:key:<lockKey>

  ARGV[1] prefix of the queue's job hashes   <prefix>:<queue>:
  ARGV[2] the job's id
  ARGV[3] expiry of the order set, ms (see enter-job.lua)

  Returns
    {}                   nobody else waits for the key (the set is gone)
    {headId, delayed}    the new head; delayed = 1 when it sits in the delayed set
]]
-- rcall, jobPrefix and finished() come from job-common.lua.
local orderKey = KEYS[1]

rcall("ZREM", orderKey, ARGV[2])
for _ = 1, 1000 do
  local head = rcall("ZRANGE", orderKey, 0, 0)[1]
  if head == false or head == nil then return {} end
  if not finished(head) then
    rcall("PEXPIRE", orderKey, ARGV[3])
    local delayed = rcall("ZSCORE", jobPrefix .. "delayed", head) and 1 or 0
    return {head, delayed}
  end
  rcall("ZREM", orderKey, head)
end
return {}
