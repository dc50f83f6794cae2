#!/usr/bin/env bash
# bench/watch.sh: `lockctl watch --pattern` against `redis-cli --scan` on
# the same keyspace in the same run (issue 41; docs/monitoring.md holds a
# copy of the figures).
#
# Starts its own redis-server on a free loopback port, loads KEYS keys
# (default 1,000,000) of which LOCKS (default 100,000) are locks of mixed
# layouts (bench/keyspace.awk), then reports:
#   - one full pass, unpaced (--interval 1ms --duration 1ms: the first pass
#     is always made whole), and its ratio to `redis-cli --scan`;
#   - Redis-side commands/s while watch follows the pattern as deployed
#     (the default --interval 10s, paced over it) for MINUTES minutes;
#   - watch's peak RSS (/usr/bin/time) in both runs (goal < 150 MiB), and
#     how long it takes to end after SIGTERM.
#
# Usage: bench/watch.sh            (from the repository root)
#        KEYS=200000 LOCKS=20000 MINUTES=0.5 bench/watch.sh
set -euo pipefail

KEYS=${KEYS:-1000000}
LOCKS=${LOCKS:-100000}
MINUTES=${MINUTES:-1}
PATTERN='*lock*'
. "$(dirname "$0")/keyspace.sh"

echo "building lockctl" >&2
(cd "$root" && go build -trimpath -o "$work/lockctl" .)
start_redis
load "$KEYS" "$LOCKS"
dbsize=$(redis-cli -p "$port" dbsize)

now() { date +%s.%N; }
scan_cli() {
	local t0
	t0=$(now)
	redis-cli -p "$port" --scan --pattern "$PATTERN" | wc -l >"$work/n_cli"
	echo "$(now) - $t0" | bc -l
}
watch() { # watch ARGS...: lockctl watch --pattern in the background, peak RSS to $work/time.txt
	/usr/bin/time -v -o "$work/time.txt" "$work/lockctl" --redis "redis://127.0.0.1:$port/0" watch --pattern "$PATTERN" -o jsonl "$@" >"$work/events.jsonl" 2>>"$work/watch.log" &
	watch_pid=$!
}
peak() { echo $(($(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt") / 1024)); }
info() { redis-cli -p "$port" info "$1" | tr -d '\r'; }

cli1=$(scan_cli)
t0=$(now)
watch --interval 1ms --duration 1ms
wait "$watch_pid"
pass=$(echo "$(now) - $t0" | bc -l)
events=$(wc -l <"$work/events.jsonl")
unpaced_rss=$(peak)
cli2=$(scan_cli)
cli=$(echo "($cli1 + $cli2) / 2" | bc -l)

# Paced as deployed: DBSIZE keys per --interval (10s), Redis' own counters.
c0=$(info stats | awk -F: '/^total_commands_processed/ { print $2 }')
secs=$(echo "$MINUTES * 60" | bc -l)
watch
sleep "$secs"
c1=$(info stats | awk -F: '/^total_commands_processed/ { print $2 }')
sent=$(now)
pkill -TERM -P "$watch_pid" # lockctl, the child of time (which does not pass signals on)
wait "$watch_pid" || true
stop=$(echo "$(now) - $sent" | bc -l)
paced_rss=$(peak)

echo
echo "date:                        $(date -u +%Y-%m-%dT%H:%MZ), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)"
echo "keyspace:                    $dbsize keys, $(cat "$work/n_cli") matching '$PATTERN'"
printf 'redis-cli --scan:            %6.2fs  (COUNT 10; %.2fs before the pass, %.2fs after)\n' "$cli" "$cli1" "$cli2"
printf 'watch first pass, unpaced:   %6.2fs  (%d events, to exit)\n' "$pass" "$events"
printf 'ratio pass/redis-cli:        %6.2f  (goal <= 1)\n' "$(echo "$pass / $cli" | bc -l)"
printf 'Redis, paced %s min:         %.0f commands/s (watch --interval 10s)\n' "$MINUTES" "$(echo "($c1 - $c0) / $secs" | bc -l)"
echo "watch peak RSS:              $unpaced_rss MiB unpaced, $paced_rss MiB paced (goal < 150 MiB)"
printf 'SIGTERM to exit, paced:      %6.2fs\n' "$stop"
