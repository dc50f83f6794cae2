#!/usr/bin/env bash
# bench/startup.sh: `lockctl version` against a Go hello world, in turns in
# one run (bench/startup), built as the release is; then the package inits
# of one start that cost most (GODEBUG=inittrace=1, medians of TRACES runs).
#
# Usage: bench/startup.sh             (from anywhere)
#        RUNS=201 TRACES=41 bench/startup.sh
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-101}
TRACES=${TRACES:-21}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd .. && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/lockctl" .)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/hello" ./hello
go build -o "$tmp/startup" ./startup
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), nproc $(nproc)"
"$tmp/startup" -n "$RUNS" "$tmp/lockctl version" "$tmp/hello" | awk -v n="$RUNS" '
  NR == 1 { a = $1 } NR == 2 { b = $1 }
  END { printf "median of %d: lockctl version %.2f ms, hello %.2f ms, ratio %.2fx (goal <= 3x)\n", n, a, b, a / b }'
for _ in $(seq "$TRACES"); do GODEBUG=inittrace=1 "$tmp/lockctl" version 2>&1 >/dev/null; done | awk '
  $1 == "init" { t[$2] = t[$2] " " $5; n[$2]++ }
  END {
    for (p in t) {
      m = split(substr(t[p], 2), v, " ")
      for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { x = v[j]; v[j] = v[j-1]; v[j-1] = x }
      med = v[int((m + 1) / 2)]; sum += med
      printf "%.3f ms\t%s\n", med, p
    }
    printf "%.3f ms\tall package inits (sum of medians)\n", sum
  }' | sort -rn | head -16
