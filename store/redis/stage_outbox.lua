-- stage_outbox(member, n, [id, topic, payload] * n): queues the outbox
-- messages of the record `member` on their own, outside any completion,
-- checking nothing about the record. 1. A message id that exists already
-- is refused (CONFLICT) before anything is written.
local m, n = ARGV[1], tonumber(ARGV[2])
for i = 0, n - 1 do
  local id = ARGV[3 + 3 * i]
  if redis.call('EXISTS', okey(id)) == 1 then
    return redis.error_reply('CONFLICT outbox message ' .. id .. ' exists')
  end
end
for i = 0, n - 1 do
  local id = ARGV[3 + 3 * i]
  local seq = redis.call('INCR', SEQ)
  redis.call('HSET', okey(id), 'm', m, 'topic', ARGV[4 + 3 * i], 'payload', ARGV[5 + 3 * i], 'published', 0)
  redis.call('ZADD', PENDING, seq, id)
end
return 1
