-- release: owner-checked delete (compare the exact bytes, then DEL).
-- KEYS[1] lock key
-- ARGV[1] the holder's exact value "<fence>:<owner>"
-- Returns 1 when deleted, 0 when the key is gone, held by another owner or of
-- another type: pcall turns GET's WRONGTYPE error into a table, which never
-- equals ARGV[1], so such a key is left alone (the error counts in INFO
-- errorstats). Any other GET error (an ACL denial) is returned as an error,
-- as redis.call would.
local v = redis.pcall('GET', KEYS[1])
if v ~= ARGV[1] then
  if type(v) == 'table' and v.err:sub(1, 9) ~= 'WRONGTYPE' then
    return v
  end
  return 0
end
return redis.call('DEL', KEYS[1])
