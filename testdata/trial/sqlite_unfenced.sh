#!/bin/sh
# The worker of cmd/testdata/script/trial_store.txtar (SQLite via sqlite3).
# Lock with SET NX PX and take the fence (INCR) in the same script, so a
# pause of the holder always finds its fence taken; read the balance, work,
# write it back plus one without checking the fence, and log the write.
db=${DATABASE_URL#sqlite:}
q() { sqlite3 -cmd ".timeout 5000" "$db" "$@"; }
tok="w$LOCKCTL_TRIAL_WORKER-$$"
acquire="if redis.call('set',KEYS[1],ARGV[1],'NX','PX',1000) then return redis.call('incr',KEYS[2]) end return 0"
while :; do
	fence=$(redis-cli -u "$REDIS_URL" EVAL "$acquire" 2 lock:acct fence:acct "$tok")
	if [ "$fence" != 0 ]; then
		b=$(q "SELECT balance FROM acct WHERE id = 1")
		sleep 0.3
		q "BEGIN; UPDATE acct SET balance = $((b + 1)) WHERE id = 1; INSERT INTO writes (fence) VALUES ($fence); COMMIT;"
		redis-cli -u "$REDIS_URL" EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0" 1 lock:acct "$tok" >/dev/null
	fi
	sleep 0.05
done
