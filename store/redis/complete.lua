-- complete(member, attempt, status, body, has_effect, effect_id,
-- effect_data, n, [id, topic, payload] * n): if `attempt` holds the record,
-- in one step: the record becomes completed with the response, the local
-- effect row is appended and the outbox messages are queued. 1, or 0 when
-- fenced. A message id that exists already is refused (CONFLICT) before
-- anything is written.
local m, attempt = ARGV[1], ARGV[2]
if not held(m, attempt) then return 0 end
local n = tonumber(ARGV[8])
for i = 0, n - 1 do
  local id = ARGV[9 + 3 * i]
  if redis.call('EXISTS', okey(id)) == 1 then
    return redis.error_reply('CONFLICT outbox message ' .. id .. ' exists')
  end
end
redis.call('HSET', rkey(m), 'status', 'completed', 'rstatus', ARGV[3], 'rbody', ARGV[4])
redis.call('HDEL', rkey(m), 'locked_until', 'rkey', 'rdata')
redis.call('ZREM', LEASES, m)
if ARGV[5] == '1' then redis.call('RPUSH', ekey(m), ARGV[6], ARGV[7]) end
for i = 0, n - 1 do
  local id = ARGV[9 + 3 * i]
  local seq = redis.call('INCR', SEQ)
  redis.call('HSET', okey(id), 'm', m, 'topic', ARGV[10 + 3 * i], 'payload', ARGV[11 + 3 * i], 'published', 0)
  redis.call('ZADD', PENDING, seq, id)
end
return 1
