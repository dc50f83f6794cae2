#!/bin/sh
# A worker whose read-modify-write carries no fence at all: it takes
# lock:counter with SET NX PX, reads the counter, works 300 ms and writes it
# back plus one. It prints what it read and wrote (no fence, no seq), so the
# fence judge has nothing to compare and only the linearizability check sees
# a pause past the lease: two writes back from the same read, a lost update.
cli() { redis-cli -u "$REDIS_URL" "$@"; }
tok="w$LOCKCTL_TRIAL_WORKER-$$"
while :; do
	if [ "$(cli SET lock:counter "$tok" NX PX 1000)" = OK ]; then
		echo '{"op":"invoke","resource":"counter"}'
		v=$(cli GET counter)
		v=${v:-0}
		sleep 0.3
		cli SET counter $((v + 1)) >/dev/null
		echo "{\"op\":\"ok\",\"resource\":\"counter\",\"read\":$v,\"value\":$((v + 1))}"
		cli EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0" 1 lock:counter "$tok" >/dev/null
	fi
	sleep 0.05
done
