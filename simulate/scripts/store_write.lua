-- store_write: the live fenced store's compare-fence-then-write.
-- KEYS[1] the store hash (fields highest, newest, fence, writer, writes)
-- ARGV[1] the writer's fencing token, ARGV[2] the writer's name,
-- ARGV[3] "1" when fencing is on (refuse a token below the highest seen),
-- ARGV[4] the writer's grant: 1 for the run's first acquire, 2 for the next...
-- Returns {1, highest_before, newest_before} when the write was applied,
-- {0, highest, newest} when refused. newest is the latest grant that wrote:
-- a write applied after a later grant's is stale even when its fence is not
-- lower (a fence issued twice, after a failover).
local highest = tonumber(redis.call('HGET', KEYS[1], 'highest') or '0')
local newest = tonumber(redis.call('HGET', KEYS[1], 'newest') or '0')
local fence = tonumber(ARGV[1])
local grant = tonumber(ARGV[4])
if ARGV[3] == '1' and fence < highest then
  return {0, highest, newest}
end
if fence > highest then
  redis.call('HSET', KEYS[1], 'highest', fence)
end
if grant > newest then
  redis.call('HSET', KEYS[1], 'newest', grant)
end
redis.call('HSET', KEYS[1], 'fence', fence, 'writer', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'writes', 1)
return {1, highest, newest}
