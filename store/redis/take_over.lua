-- take_over(member, expected, now, locked_until): the fenced takeover. Only
-- an in_progress record held by `expected` whose lease ran out is taken:
-- the attempt is bumped and the lease renewed, the recovery point kept.
-- {1, attempt} when granted; {0, record} (or {0}) when refused.
local m, expected, now, until_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local st = redis.call('HMGET', rkey(m), 'status', 'attempt', 'locked_until')
if st[1] == 'in_progress' and st[2] == expected and tonumber(st[3]) <= tonumber(now) then
  local attempt = tonumber(st[2]) + 1
  redis.call('HSET', rkey(m), 'attempt', attempt, 'locked_until', until_ms)
  redis.call('ZADD', LEASES, until_ms, m)
  return {1, attempt}
end
if st[1] == 'released' then return {0} end
return {0, record(m)}
