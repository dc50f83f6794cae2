-- release: owner-checked delete (compare the exact bytes, then DEL).
-- KEYS[1] lock key
-- ARGV[1] the holder's exact value "<fence>:<owner>"
-- Returns 1 when deleted, 0 when the key is gone or held by another owner.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('DEL', KEYS[1])
