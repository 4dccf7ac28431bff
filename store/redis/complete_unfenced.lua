-- The broken completion of `--flaw unfenced-completion`: a plain SET of the
-- response that ignores the attempt, so a stale holder's completion lands
-- on a record someone else took over. Arguments as complete.lua's, which
-- it runs with the attempt that holds the record now.
local m = ARGV[1]
local st = redis.call('HMGET', rkey(m), 'status', 'attempt')
if st[1] == 'in_progress' then ARGV[2] = st[2] end
