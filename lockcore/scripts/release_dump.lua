-- release_dump: delete a key that holds no lock string (a Redisson hash, a
-- stray list) only while it still serializes as it did when read: DUMP is
-- its type and contents, not its TTL, so a renewal alone does not stop it.
-- KEYS[1] the key
-- ARGV[1] the key's DUMP as read
-- Returns 1 when deleted, 0 when the key is gone or its DUMP differs. A DUMP
-- error (an ACL denial) is returned as an error.
if redis.call('DUMP', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
