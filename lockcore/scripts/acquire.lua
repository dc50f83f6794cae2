-- acquire: SET PX of "<fence>:<owner>" and INCR of the fence counter,
-- atomically, only when the lock key does not exist (a refused attempt spends
-- no fence). PTTL is the existence check (-2: no key) and, when the key
-- exists, already the first half of the answer.
-- KEYS[1] lock key, KEYS[2] fence counter key (same cluster slot)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] bytes of a holder's value to return
-- Returns the fence (an integer) when obtained; {pttl_ms, type} (an array)
-- when the key exists, and for a string {pttl_ms, type, strlen, its first
-- ARGV[3] bytes}: a holder's value of any size costs ARGV[3] bytes on the
-- wire, on every retry of run --wait. The fence is formatted with %d: Lua numbers are doubles, and
-- plain concatenation writes 1e+14 from 10^14 on.
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  local t = redis.call('TYPE', KEYS[1])['ok']
  if t == 'string' then
    return {pttl, t, redis.call('STRLEN', KEYS[1]), redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)}
  end
  return {pttl, t}
end
local fence
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- A missing counter (never created, or lost in an empty restart, an
  -- eviction or a failover) starts at the server's TIME in microseconds since
  -- the epoch: above every fence an earlier counter issued, assuming the
  -- server's clock did not go back and fewer than one fence per microsecond
  -- was issued. About 1.8e15 now: under 2^53, so the double is exact.
  if redis.replicate_commands then
    -- Redis before 7: a write after TIME must replicate as effects.
    redis.replicate_commands()
  end
  local now = redis.call('TIME')
  fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
  redis.call('SET', KEYS[2], string.format('%d', fence))
else
  -- A fence counter INCR refuses (not an integer, at 2^63-1, another type)
  -- is an error reply "BADFENCE <Redis's error>", and nothing is written.
  fence = redis.pcall('INCR', KEYS[2])
  if type(fence) == 'table' then
    return redis.error_reply('BADFENCE ' .. fence.err)
  end
end
redis.call('SET', KEYS[1], string.format('%d:%s', fence, ARGV[1]), 'PX', ARGV[2])
return fence
