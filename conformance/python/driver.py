"""The Python driver of the conformance suite (conformance/driver_test.go).

Takes a redis-py Lock (Debian's python3-redis) and holds it until told to
renew or release it on stdin, or until it is killed.

Usage: python3 driver.py <library> <mode> <host:port> <name>
Prints one JSON line per action: {"op":"acquired","keys":[...],"owner_hex":...},
{"op":"renewed"}, {"op":"released"}, or {"op":"error","error":...} (exit 1).
Modes: "default" (no timeout: redis-py's default, the key never expires),
"ttl" (timeout=20 s), "thread-local-off" (thread_local=False, 20 s).
"""
import json
import sys

import redis


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    lib, mode, addr, name = sys.argv[1:5]
    if lib != "redis-py":
        raise SystemExit(f"unknown library {lib}: redis-py")
    host, port = addr.split(":")
    client = redis.Redis(host=host, port=int(port))
    timeout = None if mode == "default" else 20
    lock = client.lock(name, timeout=timeout, thread_local=(mode != "thread-local-off"))
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
