#!/usr/bin/env bash
# Throughput of `lockctl simulate --explore` on one core (goal: at least
# 100,000 schedules per second for every benchmarked scenario).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(go test ./simulate -run '^$' -bench BenchmarkExplore -benchtime 20x -cpu 1)
echo "$out"
echo "$out" | awk '/schedules\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "schedules/s" && $i < 100000) { print "below goal: " $1; bad = 1 } }
  END { exit bad }'
