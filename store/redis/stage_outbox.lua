-- stage_outbox(member, n, [id, topic, payload] * n): queues the outbox
-- messages of the record `member` on their own, outside any completion,
-- checking nothing about the record. 1. A message id that exists already
-- is refused (CONFLICT) before anything is written.
local m, n = ARGV[1], tonumber(ARGV[2])
local taken = outbox_taken(3, n)
if taken then return redis.error_reply('CONFLICT outbox message ' .. taken .. ' exists') end
queue_outbox(m, 3, n)
return 1
