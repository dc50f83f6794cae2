#!/bin/sh
# The same worker with a fenced write: a script refuses a fence below the
# highest the counter has seen, so a stale holder's write fails. It prints
# invoke right before the write: a write took effect between that line and
# its ok.
cli() { redis-cli -u "$REDIS_URL" "$@"; }
tok="w$LOCKCTL_TRIAL_WORKER-$$"
write="local h=tonumber(redis.call('get',KEYS[2]) or '0') if tonumber(ARGV[1]) < h then return 0 end redis.call('set',KEYS[2],ARGV[1]) redis.call('set',KEYS[1],ARGV[2]) return 1"
while :; do
	if [ "$(cli SET lock:counter "$tok" NX PX 1000)" = OK ]; then
		fence=$(cli INCR fence:counter)
		v=$(cli GET counter)
		sleep 0.3
		echo "{\"op\":\"invoke\",\"resource\":\"counter\",\"fence\":$fence}"
		if [ "$(cli EVAL "$write" 2 counter counter:fence "$fence" $((${v:-0} + 1)))" = 1 ]; then
			echo "{\"op\":\"ok\",\"resource\":\"counter\",\"fence\":$fence}"
		else
			echo "{\"op\":\"fail\",\"resource\":\"counter\",\"fence\":$fence}"
		fi
		cli EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0" 1 lock:counter "$tok" >/dev/null
	fi
	sleep 0.05
done
