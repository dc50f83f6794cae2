#!/usr/bin/env bash
# bench/exporter.sh: `lockctl exporter` against `redis-cli --scan` on the
# same keyspace in the same run (issue 29; docs/monitoring.md holds a copy).
#
# Starts its own redis-server on a free loopback port, loads KEYS keys
# (default 1,000,000) of which LOCKS (default 100,000) are locks of mixed
# layouts (bench/keyspace.awk), then reports:
#   - one full pass of the exporter, unpaced (--interval 1ms), over
#     '*lock*' as lockctl_scan_duration_seconds, and its ratio to
#     `redis-cli --scan --pattern '*lock*'`;
#   - Redis-side cost of exporting with the defaults (--interval 30s, paced
#     over it) for MINUTES minutes: commands/s (INFO stats
#     total_commands_processed) and used_cpu_sys+used_cpu_user per minute;
#   - the exporter's RSS (VmRSS, VmHWM) after its passes, and the series
#     /metrics serves, at KEYS keys and again at SMALL_KEYS (default
#     100,000 with a tenth locks), and the series at 100 locks.
#
# Usage: bench/exporter.sh            (from the repository root)
#        KEYS=200000 LOCKS=20000 MINUTES=0.5 bench/exporter.sh
set -euo pipefail

KEYS=${KEYS:-1000000}
LOCKS=${LOCKS:-100000}
SMALL_KEYS=${SMALL_KEYS:-100000}
MINUTES=${MINUTES:-1}
PATTERN='*lock*'
. "$(dirname "$0")/keyspace.sh"
mport=$(freeport)
bench_stop() { if [[ -n "${exp_pid:-}" ]]; then kill "$exp_pid" 2>/dev/null || true; wait "$exp_pid" 2>/dev/null || true; fi; }

echo "building lockctl and lockctl-exporter" >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/lockctl" . && CGO_ENABLED=0 go build -trimpath -o "$work/lockctl-exporter" ./lockctl-exporter)

start_redis
metric() { curl -s "127.0.0.1:$mport/metrics" | awk -v m="$1" '!found && ($1 == m || index($1, m "{") == 1) { print $2; found = 1 }'; } # no early exit: pipefail would see curl's SIGPIPE
# start_exporter ARGS...: runs the exporter in the background, waits for /healthz.
start_exporter() {
	"$work/lockctl" --redis "redis://127.0.0.1:$port/0" exporter --listen "127.0.0.1:$mport" --pattern "$PATTERN" "$@" 2>>"$work/exporter.log" &
	exp_pid=$!
	for _ in $(seq 100); do curl -sf "127.0.0.1:$mport/healthz" >/dev/null && return; sleep 0.1; done
	echo "exporter did not start:" >&2; cat "$work/exporter.log" >&2; exit 1
}
stop_exporter() { kill -TERM "$exp_pid"; wait "$exp_pid" || true; exp_pid=; }
# wait_passes N: until lockctl_scan_keys_total has grown N passes' worth.
wait_passes() {
	local dbsize want
	dbsize=$(redis-cli -p "$port" dbsize)
	want=$(($1 * dbsize))
	for _ in $(seq 6000); do
		local got; got=$(metric lockctl_scan_keys_total); got=${got:-0}
		if awk -v g="$got" -v w="$want" 'BEGIN { exit !(g + 0 >= w) }'; then return; fi
		sleep 0.1
	done
	echo "no $1 passes after 10 min" >&2; exit 1
}
rss() { awk '/^VmRSS|^VmHWM/ { printf "%s %d MiB  ", $1, $2 / 1024 }' "/proc/$exp_pid/status"; }
series() { curl -s "127.0.0.1:$mport/metrics" | awk '!/^#/ { n++; if ($1 ~ /^lockctl_/) l++ } END { printf "%d series (%d lockctl_*)", n, l }'; }

load "$KEYS" "$LOCKS"
dbsize=$(redis-cli -p "$port" dbsize)
now() { date +%s.%N; }
# The machine's load varies: redis-cli runs before and after the passes,
# and the ratio takes the mean of the two; inspect --pattern is the
# reference a pass should match (the same scan, without the Differs).
scan_cli() {
	local t0 t1
	t0=$(now)
	redis-cli -p "$port" --scan --pattern "$PATTERN" | wc -l >"$work/n_cli"
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
cli1=$(scan_cli)
t0=$(now)
"$work/lockctl" --redis "redis://127.0.0.1:$port/0" inspect --pattern "$PATTERN" -o jsonl >/dev/null
inspect=$(echo "$(now) - $t0" | bc -l)

# Unpaced: passes back to back; the third pass's duration is one full cycle.
start_exporter --interval 1ms
wait_passes 3
cycle=$(metric lockctl_scan_duration_seconds)
locks=$(metric lockctl_scan_locks)
big_rss=$(rss)
big_series=$(series)
stop_exporter
cli2=$(scan_cli)
cli=$(echo "($cli1 + $cli2) / 2" | bc -l)
n_cli=$(cat "$work/n_cli")

# Paced as deployed (30s interval, DBSIZE/30s keys/s): Redis' own counters.
start_exporter
info() { redis-cli -p "$port" info "$1" | tr -d '\r'; }
c0=$(info stats | awk -F: '/^total_commands_processed/ { print $2 }')
u0=$(info cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { print s }')
secs=$(echo "$MINUTES * 60" | bc -l)
sleep "$secs"
c1=$(info stats | awk -F: '/^total_commands_processed/ { print $2 }')
u1=$(info cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { print s }')
paced_rss=$(rss)
stop_exporter

load "$SMALL_KEYS" "$((SMALL_KEYS / 10))"
start_exporter --interval 1ms
wait_passes 3
small_rss=$(rss)
small_series=$(series)
stop_exporter

load 1000 100
start_exporter --interval 1ms
wait_passes 3
tiny_series=$(series)
stop_exporter

echo
echo "date:                         $(date -u +%Y-%m-%dT%H:%MZ), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)"
echo "keyspace:                     $dbsize keys, $n_cli matching '$PATTERN', $locks locks followed"
printf 'redis-cli --scan:             %6.2fs  (%d names, COUNT 10; %.2fs before the passes, %.2fs after)\n' "$cli" "$n_cli" "$cli1" "$cli2"
printf 'lockctl inspect --pattern:    %6.2fs  (-o jsonl, for reference)\n' "$inspect"
printf 'exporter full pass, unpaced:  %6.2fs  (lockctl_scan_duration_seconds, third pass)\n' "$cycle"
printf 'ratio pass/redis-cli:         %6.2f  (goal <= 1)\n' "$(echo "$cycle / $cli" | bc -l)"
printf 'Redis, paced %s min:          %.0f commands/s, %.2f s CPU (sys+user) per minute\n' "$MINUTES" \
	"$(echo "($c1 - $c0) / $secs" | bc -l)" "$(echo "($u1 - $u0) / $MINUTES" | bc -l)"
echo "exporter RSS at $dbsize keys:  $big_rss(unpaced); $paced_rss(paced)  (goal < 150 MiB)"
echo "exporter RSS at $SMALL_KEYS keys:   $small_rss"
echo "series at $locks locks:     $big_series"
echo "series at $SMALL_KEYS/10 locks:  $small_series"
echo "series at 100 locks:          $tiny_series"
