-- stale_in_progress(now): every in_progress record whose lease ran out at
-- or before now, as {member, record} pairs. The caller orders them by
-- scope and keeps the first `limit` (Lua's string order follows the
-- server's locale; Rust's is bytewise, as the trait asks).
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', LEASES, '-inf', ARGV[1])) do
  local r = record(m)
  if r and r[2] == 'in_progress' then out[#out + 1] = {m, r} end
end
return out
