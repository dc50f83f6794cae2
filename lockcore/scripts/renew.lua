-- renew: owner-checked PEXPIRE that sets the TTL back to the full lease.
-- Never adds to what is left and never re-creates a missing key.
-- KEYS[1] lock key
-- ARGV[1] the holder's exact value "<fence>:<owner>", ARGV[2] lease in ms
-- Returns 1 when renewed, 0 when the key is gone, held by another owner or of
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
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
