"""The Python driver of the conformance suite (conformance/harness_test.go).

Takes a redis-py Lock (Debian's python3-redis) and holds it until told to
renew or release it on stdin, or until it is killed.

Usage: python3 driver.py <library> <mode> <host:port> <name>
Prints one JSON line per action: {"op":"acquired","keys":[...],"owner_hex":...},
{"op":"renewed"}, {"op":"released"}, or {"op":"error","error":...} (exit 1).
Modes: "default" (no timeout: redis-py's default, the key never expires),
"ttl" (timeout=20 s); "bulk" takes BULK locks named <name>-<i> (120 s),
prints {"op":"bulk","keys":[...]} and exits leaving them held (issue 20
item 2).
"""
import json
import sys

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


def main():
    lib, mode, addr, name = sys.argv[1:5]
    if lib != "redis-py":
        raise SystemExit(f"unknown library {lib}: redis-py")
    host, port = addr.split(":")
    client = redis.Redis(host=host, port=int(port))
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
    import threading
    threading.Event().wait()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one JSON line for the test, not a traceback
        emit({"op": "error", "error": repr(e)})
        sys.exit(1)
