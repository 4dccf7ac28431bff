-- release(member, attempt): if `attempt` holds the record, it becomes a
-- tombstone that keeps its attempt and created_at: the key reads as absent,
-- and the next claim continues the count. 1, or 0 when fenced.
local m, attempt = ARGV[1], ARGV[2]
if not held(m, attempt) then return 0 end
redis.call('HSET', rkey(m), 'status', 'released')
redis.call('HDEL', rkey(m), 'fp', 'locked_until', 'rkey', 'rdata', 'rstatus', 'rbody')
redis.call('ZREM', LEASES, m)
return 1
