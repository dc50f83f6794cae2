-- acquire: SET NX PX and INCR of the fence counter, atomically.
-- KEYS[1] lock key, KEYS[2] fence counter key (same cluster slot)
-- ARGV[1] owner token, ARGV[2] lease in ms
-- Returns {1, fence} when obtained; {0, pttl_ms, type} when the key exists
-- (the caller reads the holder with GET when type is "string").
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' then
  return {0, redis.call('PTTL', KEYS[1]), t}
end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], fence .. ':' .. ARGV[1], 'PX', ARGV[2])
return {1, fence}
