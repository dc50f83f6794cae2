-- failover: the emulated promotion of a lagging replica, in one step, so
-- no acquire comes between its writes.
-- KEYS[1] lock key, KEYS[2] fence counter key (same cluster slot)
-- ARGV[1] the lock's value to put back ("" for no key), ARGV[2] its PTTL in
-- ms, ARGV[3] the fence counter to put back ("" leaves it: it is durable)
-- Returns the lock's value before (false when there was none).
local before = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[2], ARGV[3])
end
return before
