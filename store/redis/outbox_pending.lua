-- outbox_pending(last): unpublished messages in commit order, the first
-- last + 1 of them (-1: all), as {id, member, topic, payload}.
local out = {}
for _, id in ipairs(redis.call('ZRANGE', PENDING, 0, ARGV[1])) do
  local v = redis.call('HMGET', okey(id), 'm', 'topic', 'payload')
  out[#out + 1] = {id, v[1], v[2], v[3]}
end
return out
