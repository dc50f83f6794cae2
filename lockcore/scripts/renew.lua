-- renew: owner-checked PEXPIRE that sets the TTL back to the full lease.
-- Never adds to what is left and never re-creates a missing key.
-- KEYS[1] lock key
-- ARGV[1] the holder's exact value "<fence>:<owner>", ARGV[2] lease in ms
-- Returns 1 when renewed, 0 when the key is gone or held by another owner.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
