-- complete(member, attempt, status, body, has_effect, effect_id,
-- effect_data, n, [id, topic, payload] * n): if `attempt` holds the record,
-- in one step: the record becomes completed with the response, the local
-- effect row is appended and the outbox messages are queued. 1, or 0 when
-- fenced. A message id that exists already is refused (CONFLICT) before
-- anything is written.
local m, attempt = ARGV[1], ARGV[2]
if not held(m, attempt) then return 0 end
local n = tonumber(ARGV[8])
local taken = outbox_taken(9, n)
if taken then return redis.error_reply('CONFLICT outbox message ' .. taken .. ' exists') end
redis.call('HSET', rkey(m), 'status', 'completed', 'rstatus', ARGV[3], 'rbody', ARGV[4])
redis.call('HDEL', rkey(m), 'locked_until', 'rkey', 'rdata')
redis.call('ZREM', LEASES, m)
if ARGV[5] == '1' then redis.call('RPUSH', ekey(m), ARGV[6], ARGV[7]) end
queue_outbox(m, 9, n)
return 1
