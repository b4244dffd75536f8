-- Prepended to enter-job.lua and leave-job.lua (Redis scripts cannot include one
-- another). Both take, first:
--   ARGV[1] prefix of the queue's job hashes   <prefix>:<queue>:
--   ARGV[2] job-hash field recording a job's limit (its `concurrency`)
--   ARGV[3] job-hash field marking a job parked by us (waiting for its turn)
--   ARGV[4] job-hash field marking a job let in (holding a place until it leaves)
local rcall = redis.call
local jobPrefix = ARGV[1]
local limitField = ARGV[2]
local parkedField = ARGV[3]
local insideField = ARGV[4]

-- A job that finished for good (or was removed), e.g. failed by the stalled
-- checker without leaving: it no longer holds its place.
local function finished(id)
  if rcall("EXISTS", jobPrefix .. id) == 0 then return true end
  if rcall("ZSCORE", jobPrefix .. "completed", id) then return true end
  if rcall("ZSCORE", jobPrefix .. "failed", id) then return true end
  return false
end

-- The state of an order: the jobs holding a place (marked inside when they were
-- let in, until they leave) and the waiting jobs that may be let in next, in
-- order. Jobs are let in strictly in order, so the jobs inside are the first of
-- the order. A waiting job may come in when the jobs inside, it included, stay
-- within the smallest limit among them and its own: with one limit N, N jobs;
-- with mixed limits, the smallest wins. `next` predicts, from recorded limits
-- (a job's limit as its last worker asked), which waiting jobs may come in one
-- after the other; each checks again for itself when it enters (enter-job.lua).
-- `ownId` is counted with `ownLimit` as given; a job with no recorded limit
-- counts as 1 (the library's default). Finished jobs met on the way leave the order.
-- Returns the ids of the jobs inside, `next` (oldest first) and whether any live job is left.
local function survey(orderKey, ownId, ownLimit)
  local inside = {}
  local nextIds = {}
  local gone = {}
  local bound = 1000
  local offset = 0
  local live = false
  local open = true
  -- Reads no further than the limits let in, plus the finished jobs it skips (a
  -- bounded number of them: any left over are dropped by a later call).
  while open and offset < 2000 do
    local size = math.max(1, math.min(100, bound - #inside - #nextIds + 1))
    local batch = rcall("ZRANGE", orderKey, offset, offset + size - 1)
    for i = 1, #batch do
      local id = batch[i]
      if finished(id) then
        gone[#gone + 1] = id
      else
        live = true
        local jobKey = jobPrefix .. id
        local limit
        if id == ownId then
          limit = ownLimit
        else
          limit = tonumber(rcall("HGET", jobKey, limitField)) or 1
        end
        if #nextIds == 0 and rcall("HEXISTS", jobKey, insideField) == 1 then
          -- Holds its place whatever the count: it was let in.
          inside[#inside + 1] = id
        elseif math.min(bound, limit) > #inside + #nextIds then
          nextIds[#nextIds + 1] = id
        else
          open = false
          break
        end
        if limit < bound then bound = limit end
      end
    end
    if #batch < size then break end
    offset = offset + #batch
  end
  for i = 1, #gone do rcall("ZREM", orderKey, gone[i]) end
  return inside, nextIds, live
end

-- The jobs of `ids` parked for their turn (marked by enter-job.lua) in the delayed
-- set: those a job letting them in must promote. A job that already ran and waits
-- out a retry's backoff there keeps its place, but gets no early start.
local function parkedOf(ids, from)
  local parked = {}
  for i = from, #ids do
    local id = ids[i]
    if rcall("HEXISTS", jobPrefix .. id, parkedField) == 1 and rcall("ZSCORE", jobPrefix .. "delayed", id) then
      parked[#parked + 1] = id
    end
  end
  return parked
end
