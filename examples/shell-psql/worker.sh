#!/bin/sh
# A lockctl trial worker that knows nothing of lockctl: plain sh, redis-cli
# and psql, and the documented interface only (REDIS_URL, DATABASE_URL,
# LOCKCTL_TRIAL_WORKER). It takes lock:account:acc-1 with SET NX PX, gets a
# fence with INCR, adds 10 to a balance in PostgreSQL with a ledger row, and
# releases the lock if it still holds it.
#
# FENCED=1 claims the account with the fence before reading and commits only
# under that claim (safe); otherwise it is a plain read-modify-write (unsafe
# under a pause longer than the lease).
set -eu
key=lock:account:acc-1
lease_ms=1000
owner="w${LOCKCTL_TRIAL_WORKER:-0}-$$"
r() { redis-cli -u "$REDIS_URL" --no-raw "$@" | sed 's/^(integer) //; s/^"\(.*\)"$/\1/'; }
q() { psql "$DATABASE_URL" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

for _ in 1 2 3 4 5 6 7 8 9 10; do
  if [ "$(r SET "$key" "$owner" NX PX "$lease_ms")" != OK ]; then
    sleep 0.05
    continue
  fi
  fence=$(r INCR fence:account:acc-1)
  if [ "${FENCED:-0}" = 1 ]; then
    # Claim: the database learns this fence before anything is read.
    balance=$(q "UPDATE accounts SET fence = $fence WHERE id = 'acc-1' AND fence < $fence RETURNING balance")
    if [ -z "$balance" ]; then
      echo "fence $fence refused at the claim" >&2
    else
      sleep 0.3 # the work
      q "WITH u AS (UPDATE accounts SET balance = $((balance + 10)) WHERE id = 'acc-1' AND fence = $fence RETURNING id)
         INSERT INTO ledger (account, amount, fence) SELECT id, 10, $fence FROM u" >/dev/null
    fi
  else
    balance=$(q "SELECT balance FROM accounts WHERE id = 'acc-1'")
    sleep 0.3 # the work
    q "WITH u AS (UPDATE accounts SET balance = $((balance + 10)) WHERE id = 'acc-1' RETURNING id)
       INSERT INTO ledger (account, amount, fence) SELECT id, 10, $fence FROM u" >/dev/null
  fi
  # Release only our own lock (compare-and-delete in one script).
  r EVAL "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0" 1 "$key" "$owner" >/dev/null
done
