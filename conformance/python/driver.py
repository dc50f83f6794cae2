"""The Python driver of the conformance suite (conformance/harness_test.go).

Takes a redis-py Lock (Debian's python3-redis), or runs an RQ job
(Debian's python3-rq), and holds it until told to renew or release it on
stdin, or until it is killed.

Usage: python3 driver.py <library> <mode> <host:port> <name>
Prints one JSON line per action: {"op":"acquired","keys":[...],"owner_hex":...},
{"op":"renewed"}, {"op":"released"}, or {"op":"error","error":...} (exit 1).
Modes: "default" (no timeout: redis-py's default, the key never expires),
"ttl" (timeout=20 s); "bulk" takes BULK locks named <name>-<i> (120 s),
prints {"op":"bulk","keys":[...]} and exits leaving them held (issue 20
item 2). Library "rq", mode "default": an RQ worker runs a job enqueued on
queue <name> until released (rq_job).
"""
import json
import os
import sys
import threading

import redis


def emit(obj):
    print(json.dumps(obj), flush=True)


BULK = 500


def bulk(client, prefix):
    keys = []
    for i in range(BULK):
        name = f"{prefix}-{i}"
        if not client.lock(name, timeout=120).acquire(blocking=False):
            raise RuntimeError(f"{name} not acquired")
        keys.append(name)
    emit({"op": "bulk", "keys": keys})


def rq_job(client, name):
    """Enqueues rqjob.hold on queue <name> and runs a forking RQ Worker on it
    (rq 1.13.0, worker.py): the work horse runs the job while the worker
    heartbeats it, ZADD XX "rq:wip:<name>" <now + 90 s> <job id> every
    job_monitoring_interval (30 s; registry.py StartedJobRegistry). On
    release the job returns and RQ removes it from that zset."""
    from rq import Queue, Worker
    from rq.version import VERSION

    import rqjob

    rqjob.release_fd, rqjob.send_fd = os.pipe()
    queue = Queue(name, connection=client)
    job = queue.enqueue(rqjob.hold)
    wip = f"rq:wip:{name}"

    def within_30s(done):
        """Polls done every 100 ms for 30 s; whether it came true."""
        for _ in range(300):
            if done():
                return True
            threading.Event().wait(0.1)
        return False

    def steer():
        if not within_30s(lambda: client.zscore(wip, job.id) is not None):
            raise RuntimeError(f"job {job.id} not started in 30 s")
        # The horse, forked by now, keeps its copy: it sees EOF once we die.
        os.close(rqjob.release_fd)
        emit({"op": "acquired", "keys": [wip], "owner_hex": job.id.encode().hex(), "version": VERSION})
        for line in sys.stdin:
            if line.strip() == "release":
                os.write(rqjob.send_fd, b"r")
                within_30s(lambda: not client.exists(wip))  # the test checks the key is gone
                emit({"op": "released"})

    def steer_or_fail():
        try:
            steer()
        except Exception as e:
            emit({"op": "error", "error": repr(e)})
            os._exit(1)

    threading.Thread(target=steer_or_fail, daemon=True).start()
    # The worker installs signal handlers: the main thread's. One job, this
    # one (the next holder's goes to its own worker); then hold until killed.
    Worker([queue], connection=client).work(burst=True, max_jobs=1, logging_level="ERROR")
    threading.Event().wait()


def main():
    lib, mode, addr, name = sys.argv[1:5]
    if lib not in ("redis-py", "rq"):
        raise SystemExit(f"unknown library {lib}: redis-py, rq")
    host, port = addr.split(":")
    client = redis.Redis(host=host, port=int(port))
    if lib == "rq":
        rq_job(client, name)
        return
    if mode == "bulk":
        bulk(client, name)
        return
    timeout = None if mode == "default" else 20
    lock = client.lock(name, timeout=timeout)
    if not lock.acquire(blocking=True, blocking_timeout=10):
        raise RuntimeError("not acquired")
    token = lock.local.token
    emit({"op": "acquired", "keys": [name], "owner_hex": token.hex(), "version": redis.__version__})
    for line in sys.stdin:
        line = line.strip()
        if line == "renew":
            if timeout is None:
                raise RuntimeError("a lock without timeout cannot be extended")
            lock.reacquire()
            emit({"op": "renewed"})
        elif line == "release":
            lock.release()
            emit({"op": "released"})
    # stdin closed: hold until killed (the crash step).
    threading.Event().wait()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one JSON line for the test, not a traceback
        emit({"op": "error", "error": repr(e)})
        sys.exit(1)
