--[[
  Takes a job's place in the per-key order of its BullMQ queue and says whether
  it may run now. Called when a worker starts processing the job, and again by a
  job that has just parked itself (to catch a promotion it might have missed).

  The order of a key is a sorted set of job ids scored by a per-queue counter:
  a job takes a number the first time it is processed (so in the order jobs
  become active, which for plain FIFO jobs is the order they were added). A job
  keeps its number across retries, parking and stalled recovery, until it
  finishes for good (leave-job.lua).

  A job only takes its number once every job that became active before it
  (further right in the active list: BullMQ pushes on the left) has taken
  its own: otherwise a later job whose worker was quicker could go first.
  The caller resolves the keys of such jobs and passes them back in ARGV[7..].

  An order set expires after ARGV[6] ms without use, so that the order of a key
  whose jobs were removed behind our back (obliterate, clean) does not stay
  forever. Parked jobs re-enter at least every recheckMs, which keeps it alive.

  KEYS[1] the queue's active list            <prefix>:<queue>:active
  KEYS[2] the queue's order counter          <prefix>:<queue>:serialized:seq
  KEYS[3] the order set of this job's key    <prefix>:<queue>:serialized:key:<lockKey>

  ARGV[1] prefix of the queue's job hashes   <prefix>:<queue>:
  ARGV[2] prefix of the order sets           <prefix>:<queue>:serialized:key:
  ARGV[3] this job's id
  ARGV[4] this job's lock key
  ARGV[5] job-hash field recording a job's lock key ('' = the job has no key)
  ARGV[6] expiry of an order set, ms (refreshed whenever it is used)
  ARGV[7..] pairs (job id, lock key) of older active jobs, oldest first

  Returns
    {0}             the job heads its key: run it
    {1, id, ...}    these older active jobs have no recorded key yet (oldest first):
                    resolve their keys and call again with them in ARGV[7..]
    {2, headId}     another job heads the key: park this one
]]
-- rcall, jobPrefix and finished() come from job-common.lua.
local orderPrefix = ARGV[2]
local jobId = ARGV[3]
local field = ARGV[5]
local ttl = ARGV[6]

local function takeNumber(id, lockKey)
  local jobKey = jobPrefix .. id
  -- A job removed meanwhile must not come back as a stray hash.
  if rcall("EXISTS", jobKey) == 0 then return end
  rcall("HSET", jobKey, field, lockKey)
  if lockKey ~= "" then
    local orderKey = orderPrefix .. lockKey
    if not rcall("ZSCORE", orderKey, id) then
      rcall("ZADD", orderKey, rcall("INCR", KEYS[2]), id)
    end
    rcall("PEXPIRE", orderKey, ttl)
  end
end

for i = 7, #ARGV - 1, 2 do
  if rcall("HEXISTS", jobPrefix .. ARGV[i], field) == 0 then takeNumber(ARGV[i], ARGV[i + 1]) end
end

local orderKey = KEYS[3]
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
  takeNumber(jobId, ARGV[4])
else
  rcall("PEXPIRE", orderKey, ttl)
end

for _ = 1, 1000 do
  local head = rcall("ZRANGE", orderKey, 0, 0)[1]
  -- Empty only if this job's hash is gone (removed while active): nothing to order.
  if head == false or head == nil then return {0} end
  if head == jobId then return {0} end
  if finished(head) then
    rcall("ZREM", orderKey, head)
  else
    return {2, head}
  end
end
return {2, ""}
