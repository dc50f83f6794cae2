#!/bin/sh
# A worker no one wrote for lockctl: it takes lock:counter with SET NX PX,
# gets a fence (INCR), reads the counter, works, and writes the counter back
# without checking the fence. A pause or a partition longer than the lease
# lets a second worker in; the first one's late write is a stale write. The
# write returns its place in the commit order (seq), so lockctl judges the
# writes in the order Redis committed them.
cli() { redis-cli -u "$REDIS_URL" "$@"; }
tok="w$LOCKCTL_TRIAL_WORKER-$$"
write="redis.call('set',KEYS[1],ARGV[1]) return redis.call('incr',KEYS[2])"
while :; do
	if [ "$(cli SET lock:counter "$tok" NX PX 1000)" = OK ]; then
		fence=$(cli INCR fence:counter)
		v=$(cli GET counter)
		sleep 0.3
		seq=$(cli EVAL "$write" 2 counter counter:seq $((${v:-0} + 1)))
		echo "{\"op\":\"ok\",\"resource\":\"counter\",\"fence\":$fence,\"seq\":$seq}"
		cli EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0" 1 lock:counter "$tok" >/dev/null
	fi
	sleep 0.05
done
