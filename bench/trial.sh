#!/usr/bin/env bash
# bench/trial.sh: lockctl trial's performance figure, the time to the first
# counterexample (issue 22), on examples/redsync-balance against PostgreSQL.
#
# Unfenced worker, pause nemesis: for each seed, trials of growing duration
# (STEPS, in seconds) until one is unsafe; that duration is the seed's time
# to the first counterexample (the database is judged at the trial's end, so
# the figure is the shortest trial that finds it, at STEPS' resolution).
# Fenced worker, every default fault: one trial of FENCED_S seconds per seed;
# any unsafe verdict is a false alarm. Prints Markdown (docs/trial.md keeps a
# copy with the date and core count).
#
#   bench/trial.sh                                   # 20 seeds, defaults below
#   SEEDS=5 FENCED_S=8 bench/trial.sh                # quicker
#   LOCKCTL=/path/to/lockctl bench/trial.sh          # a given build (lockctl-store beside it)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
SEEDS=${SEEDS:-20}
STEPS=${STEPS:-"3 4 6 10 20 40 60"}
FENCED_S=${FENCED_S:-20}
STORE=${STORE:-postgres://postgres@127.0.0.1:5432/postgres}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lockctl=${LOCKCTL:-$tmp/lockctl}
# --store runs lockctl-store, built beside lockctl (cmd/companion.go).
[ -n "${LOCKCTL:-}" ] || go build -o "$tmp/" . ./lockctl-store
(cd examples && go build -o "$tmp/redsync-balance" ./redsync-balance)

history='SELECT fence, NULL AS key, account AS resource FROM ledger ORDER BY id'
check='SELECT a.id, a.balance, COALESCE(SUM(l.amount), 0) AS ledger FROM accounts a LEFT JOIN ledger l ON l.account = a.id GROUP BY a.id, a.balance HAVING a.balance <> COALESCE(SUM(l.amount), 0)'

# verdict DURATION_S SEED NEMESES [WORKER ARGS...]: prints safe or unsafe.
verdict() {
  local d=$1 seed=$2 nemeses=$3
  shift 3
  "$lockctl" trial --workers 3 --duration "${d}s" --fault-duration 1500ms --nemesis "$nemeses" \
    --seed "$seed" --store "$STORE" --schema examples/balance.sql --history "$history" --check "$check" \
    -o json -- "$tmp/redsync-balance" "$@" 2>/dev/null |
    sed -n 's/^  "verdict": "\([a-z]*\)",$/\1/p'
}

echo "## unfenced (pause): shortest trial that finds the lost update"
echo
echo "| seed | trial time to the first counterexample |"
echo "|---|---|"
found=()
missed=0
for seed in $(seq 1 "$SEEDS"); do
  at=""
  for d in $STEPS; do
    if [ "$(verdict "$d" "$seed" pause)" = unsafe ]; then
      at=$d
      break
    fi
  done
  if [ -n "$at" ]; then
    found+=("$at")
    echo "| $seed | ${at} s |"
  else
    missed=$((missed + 1))
    echo "| $seed | not within ${d} s |"
  fi
done
echo
if [ "${#found[@]}" -gt 0 ]; then
  sorted=$(printf '%s\n' "${found[@]}" | sort -n)
  median=$(sed -n "$(((${#found[@]} + 1) / 2))p" <<<"$sorted")
  max=$(tail -n 1 <<<"$sorted")
  echo "found in $((SEEDS - missed))/$SEEDS seeds; median ${median} s, max ${max} s (steps: $STEPS s)"
else
  echo "found in 0/$SEEDS seeds"
fi

echo
echo "## fenced (all default faults, ${FENCED_S} s per seed): false alarms"
echo
alarms=()
for seed in $(seq 1 "$SEEDS"); do
  v=$(verdict "$FENCED_S" "$seed" pause,kill,partition,expire -fenced)
  [ "$v" = safe ] || alarms+=("$seed:${v:-error}")
done
echo "${#alarms[@]} false alarms over $SEEDS seeds${alarms:+: ${alarms[*]}}"
echo
echo "measured $(date -u +%Y-%m-%d) on $(nproc) cores"
