-- Prepended to every script. KEYS[1] is the store's prefix in a hash tag,
-- "{prefix}": every key of the store shares it, so all of a store's keys
-- hash to one slot and each script is atomic over everything it touches.
--
-- A record of scope (caller, key) is the hash P:r:<m>, where the member
-- m = caller .. "\0" .. key; its local effect rows are the list P:e:<m>
-- (id, data pairs); its outbox messages are hashes P:o:<id> listed by
-- commit order in the sorted set P:pending until published.
-- Indexes: P:idx (every member, score 0, so ZRANGE orders members
-- bytewise: scope order), P:created (by created_at, for the sweep),
-- P:leases (in_progress members by locked_until, for stale scans).
local P = KEYS[1]
local IDX, CREATED, LEASES = P .. ':idx', P .. ':created', P .. ':leases'
local PENDING, SEQ = P .. ':pending', P .. ':seq'
local function rkey(m) return P .. ':r:' .. m end
local function ekey(m) return P .. ':e:' .. m end
local function okey(id) return P .. ':o:' .. id end

-- The record's fields in the order the Rust side decodes them (false where
-- absent), or nil when there is no record.
local FIELDS = {'fp', 'status', 'attempt', 'locked_until', 'rkey', 'rdata', 'rstatus', 'rbody', 'created_at'}
local function record(m)
  local values = redis.call('HMGET', rkey(m), unpack(FIELDS))
  if not values[2] then return nil end
  return values
end

-- True when the record is in_progress and held by `attempt` (a string).
local function held(m, attempt)
  local st = redis.call('HMGET', rkey(m), 'status', 'attempt')
  return st[1] == 'in_progress' and st[2] == attempt
end

-- Writes a new in_progress record held by `attempt`, and indexes it.
local function insert(m, fp, attempt, now, until_ms)
  redis.call('HSET', rkey(m), 'fp', fp, 'status', 'in_progress', 'attempt', attempt,
    'locked_until', until_ms, 'created_at', now)
  redis.call('ZADD', IDX, 0, m)
  redis.call('ZADD', CREATED, now, m)
  redis.call('ZADD', LEASES, until_ms, m)
end

-- The id of the first of `n` outbox messages in ARGV from index `first`
-- ([id, topic, payload] each) that exists already, or nil.
local function outbox_taken(first, n)
  for i = 0, n - 1 do
    local id = ARGV[first + 3 * i]
    if redis.call('EXISTS', okey(id)) == 1 then return id end
  end
  return nil
end

-- Queues those `n` messages for the record `m`, in order.
local function queue_outbox(m, first, n)
  for i = 0, n - 1 do
    local id = ARGV[first + 3 * i]
    local seq = redis.call('INCR', SEQ)
    redis.call('HSET', okey(id), 'm', m, 'topic', ARGV[first + 1 + 3 * i], 'payload', ARGV[first + 2 + 3 * i], 'published', 0)
    redis.call('ZADD', PENDING, seq, id)
  end
end
