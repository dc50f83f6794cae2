#!/bin/sh
# The seed story's task: import order order-demo-001 batch by batch, run
# under `lockctl run order-demo-001`, which holds lock:OrderId:order-demo-001,
# renews it, hands this script LOCKCTL_FENCE and stops it before the lease
# could pass to another worker. Each batch is a fenced commit in PostgreSQL:
# the order is claimed with the fence before its progress is read
# (UPDATE … WHERE fence < F), and the batch commits only under that claim
# (… AND fence = F), so a holder that lost its lease cannot write.
set -eu
order=order-demo-001
F=$LOCKCTL_FENCE
q() { psql "$DATABASE_URL" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

for _ in 1 2 3; do
  done_batches=$(q "UPDATE orders SET fence = $F WHERE id = '$order' AND fence < $F RETURNING batches")
  if [ -z "$done_batches" ]; then
    echo "fence $F refused: a later holder has the order" >&2
    exit 1
  fi
  sleep 0.3 # importing the next batch
  q "WITH u AS (UPDATE orders SET batches = $((done_batches + 1)) WHERE id = '$order' AND fence = $F RETURNING id)
     INSERT INTO import_log (order_id, batch, fence) SELECT id, $((done_batches + 1)), $F FROM u" >/dev/null
done
