-- The broken claim of `--flaw check-then-insert`, after a separate read
-- found nothing: a plain SET of a new in_progress record, with no NX, so
-- it overwrites whatever another claimer inserted meanwhile and both own
-- the same attempt. Arguments as claim.lua's.
local m, fp, now, until_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local st = redis.call('HMGET', rkey(m), 'status', 'attempt')
local attempt = 1
if st[1] == 'released' then attempt = tonumber(st[2]) + 1 end
if st[1] == 'in_progress' then attempt = tonumber(st[2]) end
insert(m, fp, attempt, now, until_ms)
return {1, attempt}
