#!/bin/sh
# A lockctl trial worker that sends one message per job and retries a job
# whose reply it never saw: sh, redis-cli and the mariadb client.
#
# Under lock:jobs it picks the first job not done, "sends" it (a row in
# sends, keyed by the job's id as its idempotency key), waits 300 ms for the
# reply, then marks the job done. A worker killed while it waits has sent
# but never heard back: the job is still open and the next worker sends it
# again. Whether that is a second effect is the schema's call: with a unique
# constraint on sends.request_id the INSERT IGNORE of the retry does nothing.
set -eu
lease_ms=1000
owner="w${LOCKCTL_TRIAL_WORKER:-0}-$$"
r() { redis-cli -u "$REDIS_URL" --raw "$@"; }

# DATABASE_URL is mysql://USER[:PASSWORD]@HOST:PORT/DB (password not
# percent-encoded here); the mariadb client takes it apart.
rest=${DATABASE_URL#*://}
db=${rest#*/}; db=${db%%\?*}
hostport=${rest%%/*}; cred=
case $hostport in *@*) cred=${hostport%@*}; hostport=${hostport##*@} ;; esac
user=${cred%%:*}; pass=
case $cred in *:*) pass=${cred#*:} ;; esac
m() { MYSQL_PWD=$pass mariadb -h "${hostport%:*}" -P "${hostport##*:}" -u "$user" -N -B "$db" -e "$1"; }

while :; do
  if [ "$(r SET lock:jobs "$owner" NX PX "$lease_ms")" != OK ]; then
    sleep 0.05
    continue
  fi
  job=$(m "SELECT id FROM jobs WHERE done = 0 ORDER BY id LIMIT 1")
  [ -n "$job" ] || exit 0 # every job is done
  m "INSERT IGNORE INTO sends (request_id) VALUES ('$job')" # the send
  sleep 0.3                                                # waiting for the reply
  m "UPDATE jobs SET done = 1 WHERE id = '$job'"
  r EVAL "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0" 1 lock:jobs "$owner" >/dev/null
done
