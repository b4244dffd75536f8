--[[
  Takes a job's place in the per-key order of its BullMQ queue and says whether
  it may run now. Called when a worker starts processing the job, and again by a
  job that has just parked itself (to catch a promotion it might have missed).

  The order of a key is a sorted set of job ids scored by a per-queue counter:
  a job takes a number the first time it is processed (so in the order jobs
  become active, which for plain FIFO jobs is the order they were added). A job
  keeps its number across retries, parking and stalled recovery, until it
  finishes for good (leave-job.lua). Jobs are let in strictly in that order, as
  many at once as their limits allow (survey() in job-common.lua); a job let in
  holds its place (retries, parking on a busy app lock, stalled recovery) until
  it leaves.

  A job only takes its number once every job that became active before it
  (further right in the active list: BullMQ pushes on the left) has taken
  its own: otherwise a later job whose worker was quicker could go first.
  The caller resolves the keys of such jobs and passes them back in ARGV[11..];
  they are recorded with the caller's limit (every worker of a queue runs the
  same processor) until they enter themselves.

  An order set expires after ARGV[10] ms without use, so that the order of a key
  whose jobs were removed behind our back (obliterate, clean) does not stay
  forever. Parked jobs re-enter at least every recheckMs, which keeps it alive.

  KEYS[1] the queue's active list            <prefix>:<queue>:active
  KEYS[2] the queue's order counter          <prefix>:<queue>:serialized:seq
  KEYS[3] the order set of this job's key    <prefix>:<queue>:serialized:key:<lockKey>

  ARGV[1..4] see job-common.lua
  ARGV[5] prefix of the order sets           <prefix>:<queue>:serialized:key:
  ARGV[6] this job's id
  ARGV[7] this job's lock key
  ARGV[8] this job's limit (its `concurrency`, 1-1000)
  ARGV[9] job-hash field recording a job's lock key ('' = the job has no key)
  ARGV[10] expiry of an order set, ms (refreshed whenever it is used)
  ARGV[11..] pairs (job id, lock key) of older active jobs, oldest first

  Returns
    {0, id, ...}    the job is let in (or was already): run it, and promote these
                    parked jobs, which may come in after it
    {1, id, ...}    these older active jobs have no recorded key yet (oldest first):
                    resolve their keys and call again with them in ARGV[11..]
    {2, headId}     the key is full, or jobs ahead of this one wait (headId is the
                    oldest job of the key): park this one
]]
-- rcall, jobPrefix, the fields, finished(), survey() and parkedOf() come from job-common.lua.
local orderPrefix = ARGV[5]
local jobId = ARGV[6]
local ownLimit = tonumber(ARGV[8])
local field = ARGV[9]
local ttl = ARGV[10]

local function takeNumber(id, lockKey)
  local jobKey = jobPrefix .. id
  -- A job removed meanwhile must not come back as a stray hash.
  if rcall("EXISTS", jobKey) == 0 then return end
  rcall("HSET", jobKey, field, lockKey, limitField, ownLimit)
  -- A fresh place (a failed job retried by hand had one before).
  rcall("HDEL", jobKey, insideField, parkedField)
  if lockKey ~= "" then
    local orderKey = orderPrefix .. lockKey
    if not rcall("ZSCORE", orderKey, id) then
      rcall("ZADD", orderKey, rcall("INCR", KEYS[2]), id)
    end
    rcall("PEXPIRE", orderKey, ttl)
  end
end

for i = 11, #ARGV - 1, 2 do
  if rcall("HEXISTS", jobPrefix .. ARGV[i], field) == 0 then takeNumber(ARGV[i], ARGV[i + 1]) end
end

local orderKey = KEYS[3]
local ownKey = jobPrefix .. jobId
if not rcall("ZSCORE", orderKey, jobId) then
  local active = rcall("LRANGE", KEYS[1], 0, -1)
  local unknown = {}
  local older = false
  for i = 1, #active do
    local id = active[i]
    if older then
      if rcall("HEXISTS", jobPrefix .. id, field) == 0 and rcall("EXISTS", jobPrefix .. id) == 1 then
        table.insert(unknown, 1, id)
      end
    elseif id == jobId then
      older = true
    end
  end
  if #unknown > 0 then
    table.insert(unknown, 1, 1)
    return unknown
  end
  takeNumber(jobId, ARGV[7])
else
  rcall("PEXPIRE", orderKey, ttl)
  -- Let in before (a retry, a stalled job handed back, a busy app lock): it keeps its place.
  if rcall("HEXISTS", ownKey, insideField) == 1 then return {0} end
  -- Waiting: the limit it asks for now counts (a new deployment may have changed it).
  if rcall("EXISTS", ownKey) == 1 then rcall("HSET", ownKey, limitField, ownLimit) end
end

local inside, nextIds, live = survey(orderKey, jobId, ownLimit)
-- No live job left: only if this job's hash is gone (removed while active): nothing to order.
if not live then return {0} end
if nextIds[1] == jobId then
  rcall("HSET", ownKey, insideField, 1)
  rcall("HDEL", ownKey, parkedField)
  local reply = parkedOf(nextIds, 2)
  table.insert(reply, 1, 0)
  return reply
end
-- Marked, so that the job that lets it in promotes it (leave-job.lua, or a job entering ahead of it).
if rcall("EXISTS", ownKey) == 1 then rcall("HSET", ownKey, parkedField, 1) end
return {2, inside[1] or nextIds[1] or ""}
