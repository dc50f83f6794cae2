-- store_write: the live fenced store's compare-fence-then-write.
-- KEYS[1] the store hash (fields highest, fence, writer, writes)
-- ARGV[1] the writer's fencing token, ARGV[2] the writer's name,
-- ARGV[3] "1" when fencing is on (refuse a token below the highest seen)
-- Returns {1, highest_before} when the write was applied, {0, highest} when refused.
local highest = tonumber(redis.call('HGET', KEYS[1], 'highest') or '0')
local fence = tonumber(ARGV[1])
if ARGV[3] == '1' and fence < highest then
  return {0, highest}
end
if fence > highest then
  redis.call('HSET', KEYS[1], 'highest', fence)
end
redis.call('HSET', KEYS[1], 'fence', fence, 'writer', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'writes', 1)
return {1, highest}
