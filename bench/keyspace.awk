# bench/keyspace.awk: RESP for redis-cli --pipe, `keys` keys of which `locks`
# are locks of mixed layouts spread over the keyspace (bench/inspect.sh,
# bench/exporter.sh): awk -v keys=N -v locks=M -f bench/keyspace.awk
function resp(n, a,   i, s) { s = "*" n "\r\n"; for (i = 1; i <= n; i++) s = s "$" length(a[i]) "\r\n" a[i] "\r\n"; return s }
function hex(n,   s, i) { s = ""; for (i = 0; i < n; i++) s = s substr("0123456789abcdef", int(rand() * 16) + 1, 1); return s }
function b64(n,   s, i, al) { al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"; s = ""; for (i = 0; i < n; i++) s = s substr(al, int(rand() * 62) + 1, 1); return s }
BEGIN {
	srand(42); every = int(keys / locks); ORS = ""
	for (i = 0; i < keys; i++) {
		if (i % every != 0) { a[1] = "SET"; a[2] = "data:" i; a[3] = "{\"id\":" i ",\"v\":\"payload\"}"; print resp(3, a); continue }
		ttl = 10000 + (i % 600000); kind = (i / every) % 10
		if (kind == 0) { f = i % 997 + 1; a[1] = "SET"; a[2] = "lock:ctl:" i; a[3] = f ":" hex(32); a[4] = "PX"; a[5] = ttl; print resp(5, a)
			a[1] = "SET"; a[2] = "{lock:ctl:" i "}:fence"; a[3] = f; print resp(3, a) }
		else if (kind == 1) { a[1] = "SET"; a[2] = "locks:rs:" i; a[3] = b64(21) "A=="; a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 2) { a[1] = "SET"; a[2] = "locks:bsm:" i; a[3] = b64(21) "w"; a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 3) { a[1] = "HSET"; a[2] = "locks:rn:" i; a[3] = "ea0fb3b6-09e2-4393-9e82-" hex(12) ":1"; a[4] = "1"; print resp(4, a)
			a[1] = "PEXPIRE"; a[2] = "locks:rn:" i; a[3] = 30000; print resp(3, a) }
		else if (kind == 4) { h = hex(32); a[1] = "SET"; a[2] = "locks:py:" i; a[3] = substr(h, 1, 12) "1" substr(h, 14, 3) "8" substr(h, 18); a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 5) { h = hex(32); a[1] = "SET"; a[2] = "locks:node:" i; a[3] = substr(h, 1, 12) "4" substr(h, 14); a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 6) { a[1] = "SET"; a[2] = "job-lock:default:" i; a[3] = "ADDED:2026-05-12T13:31:45.006Z@host-" (i % 7); a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 7) { a[1] = "SET"; a[2] = "dlock:" i; a[3] = "web-" (i % 5) "_" (1000 + i % 300) "_" hex(32); a[4] = "PX"; a[5] = ttl; print resp(5, a) }
		else if (kind == 8) { a[1] = "SET"; a[2] = "horizon:lock:" i; a[3] = "1"; print resp(3, a) }
		else { a[1] = "SET"; a[2] = "locks:spring:" i; h = hex(32); a[3] = substr(h, 1, 8) "-" substr(h, 9, 4) "-4" substr(h, 14, 3) "-a" substr(h, 18, 3) "-" substr(h, 21); a[4] = "PX"; a[5] = ttl; print resp(5, a) }
	}
}
