# bench/keyspace.sh, sourced by inspect.sh, watch.sh and exporter.sh: the
# repository root ($root), a work directory ($work), a free loopback port
# ($port) with the bench's own redis-server on it once start_redis ran,
# and `load KEYS LOCKS`, which replaces its keys with bench/keyspace.awk's
# keyspace. The server and $work go on exit; a script that starts other
# background processes stops them in a bench_stop function of its own,
# called first.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(freeport)

bench_cleanup() {
	if declare -F bench_stop >/dev/null; then bench_stop; fi
	if [[ -n "${redis_pid:-}" ]]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap bench_cleanup EXIT

start_redis() {
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
	redis_pid=$!
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

# load KEYS LOCKS: RESP for redis-cli --pipe; locks are spread over the keyspace.
load() {
	redis-cli -p "$port" flushall >/dev/null
	echo "loading $1 keys ($2 locks of mixed layouts) into 127.0.0.1:$port" >&2
	awk -v keys="$1" -v locks="$2" -f "$root/bench/keyspace.awk" | redis-cli -p "$port" --pipe | tail -1 >&2
}
