-- claim(member, fingerprint, now, locked_until): atomic insert-if-absent.
-- {1, attempt} for the inserter (1, or one more than a released record's
-- tombstone held); {0, record} for everyone else.
local m, fp, now, until_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local st = redis.call('HMGET', rkey(m), 'status', 'attempt')
local attempt = 1
if st[1] then
  if st[1] ~= 'released' then return {0, record(m)} end
  attempt = tonumber(st[2]) + 1
end
redis.call('DEL', rkey(m))
insert(m, fp, attempt, now, until_ms)
return {1, attempt}
