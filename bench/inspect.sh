#!/usr/bin/env bash
# bench/inspect.sh: time `lockctl inspect --pattern` against
# `redis-cli --scan --pattern` on the same keyspace in the same run.
#
# Starts its own redis-server on a free loopback port, loads KEYS keys
# (default 1,000,000) of which LOCKS (default 100,000) are locks of mixed
# layouts (lockctl with fence counters, redsync, bsm/redislock, Redisson
# hashes, redis-py, node-redlock, shedlock, distributedlock, constant
# values), then reports wall times, their ratio, the peak RSS of
# `lockctl inspect --pattern '*lock*'` in -o jsonl, json and yaml
# (/usr/bin/time -v; goal for each: under 150 MiB at 1M keys, flat in the
# number of locks), and how long -o json and -o yaml take to end after a
# SIGTERM sent 1 s into the run (goal: under a second).
#
# Usage: bench/inspect.sh            (from the repository root)
#        KEYS=200000 LOCKS=20000 COUNT=5000 bench/inspect.sh
set -euo pipefail

KEYS=${KEYS:-1000000}
LOCKS=${LOCKS:-100000}
# COUNT, when set, is passed as lockctl's --count (SCAN COUNT hint).
count_flag=()
if [[ -n "${COUNT:-}" ]]; then count_flag=(--count "$COUNT"); fi
PATTERN='*lock*'
. "$(dirname "$0")/keyspace.sh"

echo "building lockctl"
(cd "$root" && go build -o "$work/lockctl" .)
start_redis
load "$KEYS" "$LOCKS"
dbsize=$(redis-cli -p "$port" dbsize)
echo "dbsize $dbsize"

now() { date +%s.%N; }
t0=$(now)
n_cli=$(redis-cli -p "$port" --scan --pattern "$PATTERN" | wc -l)
t1=$(now)
inspect() { # inspect FORMAT: peak RSS to $work/time-FORMAT.txt, the output to $work/locks.FORMAT
	/usr/bin/time -v -o "$work/time-$1.txt" "$work/lockctl" --redis "redis://127.0.0.1:$port/0" inspect --pattern "$PATTERN" "${count_flag[@]}" -o "$1" >"$work/locks.$1"
}
inspect jsonl
t2=$(now)
inspect json
t3=$(now)
inspect yaml
t4=$(now)
rss() { echo $(($(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time-$1.txt") / 1024)); }
# stop FORMAT: seconds from a SIGTERM, sent 1 s into a run, to its end.
stop() {
	"$work/lockctl" --redis "redis://127.0.0.1:$port/0" inspect --pattern "$PATTERN" "${count_flag[@]}" -o "$1" >/dev/null 2>&1 &
	local pid=$! sent
	sleep 1
	sent=$(now)
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || true
	echo "$(now) - $sent" | bc -l
}

cli=$(echo "$t1 - $t0" | bc -l)
jsonl=$(echo "$t2 - $t1" | bc -l)
json=$(echo "$t3 - $t2" | bc -l)
yaml=$(echo "$t4 - $t3" | bc -l)
stop_json=$(stop json)
stop_yaml=$(stop yaml)
n_jsonl=$(($(wc -l <"$work/locks.jsonl") - 1))
echo
echo "date:                      $(date -u +%Y-%m-%dT%H:%MZ), nproc $(nproc), $(redis-server --version | cut -d' ' -f3)"
echo "keyspace:                  $dbsize keys, $n_cli matching '$PATTERN'"
printf 'redis-cli --scan:          %6.2fs  (%d names, COUNT 10)\n' "$cli" "$n_cli"
printf 'lockctl inspect -o jsonl:  %6.2fs  (%d keys: type, TTL, value, companions; --count %s)\n' "$jsonl" "$n_jsonl" "${COUNT:-default}"
printf 'lockctl inspect -o json:   %6.2fs  (sorted by TTL, with summary)\n' "$json"
printf 'lockctl inspect -o yaml:   %6.2fs  (sorted by TTL, with summary)\n' "$yaml"
printf 'ratio jsonl/redis-cli:     %6.2f  (goal <= 0.50)\n' "$(echo "$jsonl / $cli" | bc -l)"
echo "peak RSS -o jsonl:         $(rss jsonl) MiB"
echo "peak RSS -o json:          $(rss json) MiB  (goal < 150)"
echo "peak RSS -o yaml:          $(rss yaml) MiB  (goal < 150)"
printf 'SIGTERM to end, -o json:   %6.2fs  (goal < 1)\n' "$stop_json"
printf 'SIGTERM to end, -o yaml:   %6.2fs  (goal < 1)\n' "$stop_yaml"
tail -1 "$work/locks.jsonl" | cut -c1-400
