-- sweep(now, window_ms): deletes completed records and tombstones with
-- created_at + window_ms <= now, never in_progress ones. Returns
-- {member, record} pairs of the completed records deleted, each as read
-- before its deletion (tombstones go silently).
local cutoff = tonumber(ARGV[1]) - tonumber(ARGV[2])
local swept = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', CREATED, '-inf', cutoff)) do
  local r = record(m)
  local status = redis.call('HGET', rkey(m), 'status')
  if status ~= 'in_progress' then
    redis.call('DEL', rkey(m))
    redis.call('ZREM', IDX, m)
    redis.call('ZREM', CREATED, m)
    if status == 'completed' and r then swept[#swept + 1] = {m, r} end
  end
end
return swept
