-- outbox_mark_published(id): 1 when the message exists (now published),
-- else 0.
local id = ARGV[1]
if redis.call('EXISTS', okey(id)) == 0 then return 0 end
redis.call('HSET', okey(id), 'published', 1)
redis.call('ZREM', PENDING, id)
return 1
