-- write_recovery_point(member, attempt, downstream_key, data): 1 when
-- `attempt` holds the record, else 0 (fenced).
local m, attempt = ARGV[1], ARGV[2]
if not held(m, attempt) then return 0 end
redis.call('HSET', rkey(m), 'rkey', ARGV[3], 'rdata', ARGV[4])
return 1
