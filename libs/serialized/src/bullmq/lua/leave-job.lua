--[[
  A job finished for good (completed, or failed with no retry left): it leaves
  the order of its key, freeing its place. Returns the parked jobs that may come
  in now (survey() in job-common.lua), so that the caller promotes them: one when
  every job of the key has the same limit, more when the job that left had a
  smaller limit than those behind it.

  KEYS[1] the order set of the job's key     <prefix>:<queue>:serialized:key:<lockKey>

  ARGV[1..4] see job-common.lua
  ARGV[5] the job's id
  ARGV[6] expiry of the order set, ms (see enter-job.lua)

  Returns the ids to promote, oldest first ({} when none, or the set is gone).
]]
-- rcall, jobPrefix, the fields, survey() and parkedOf() come from job-common.lua.
local orderKey = KEYS[1]
local jobKey = jobPrefix .. ARGV[5]

rcall("ZREM", orderKey, ARGV[5])
if rcall("EXISTS", jobKey) == 1 then rcall("HDEL", jobKey, insideField, parkedField) end
local _, nextIds, live = survey(orderKey, nil, nil)
if not live then return {} end
rcall("PEXPIRE", orderKey, ARGV[6])
return parkedOf(nextIds, 1)
