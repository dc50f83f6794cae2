"""A lockctl trial worker on redis-py's Lock and SQLite (Python's own sqlite3).

It takes lock:account:acc-1 with redis.lock.Lock (1 s timeout, no renewal),
reads account acc-1's balance, works 300 ms and writes the balance plus 10
with a ledger row of +10. Nothing at the write boundary checks that the lock
is still held, so a holder paused past its timeout writes over the next
holder's update: a lost update, which the --check query finds.

Needs Debian's python3-redis; REDIS_URL and DATABASE_URL (sqlite:PATH) come
from lockctl trial.
"""
import os
import sqlite3
import time

import redis

r = redis.Redis.from_url(os.environ["REDIS_URL"])
db = sqlite3.connect(os.environ["DATABASE_URL"].removeprefix("sqlite:"), timeout=10, isolation_level=None)

for _ in range(20):
    lock = r.lock("lock:account:acc-1", timeout=1, blocking_timeout=5, sleep=0.02)
    if not lock.acquire():
        continue
    (balance,) = db.execute("SELECT balance FROM accounts WHERE id = 'acc-1'").fetchone()
    time.sleep(0.3)  # the work
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE accounts SET balance = ? WHERE id = 'acc-1'", (balance + 10,))
    db.execute("INSERT INTO ledger (account, amount) VALUES ('acc-1', 10)")
    db.execute("COMMIT")
    try:
        lock.release()
    except redis.exceptions.LockError:
        pass  # the lease ran out: the lock is someone else's now
