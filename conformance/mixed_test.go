package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMixedKeyspace (issue 27, "done when"): one server holds a healthy lock
// of every library in cases, beside keys of shapes no layout names (tokens,
// markers, times, counters beside a lock, holder and lease zsets, hashes,
// queues) and asynq's keyspace as its source writes it. `lockctl inspect
// --pattern '*' --fail-on error` must exit 0 there; with two real faults
// added (case 1's SETNX without EXPIRE, a TTL of ten years) it must exit 1
// on exactly those two keys. It logs every error it saw, so it measures
// the false errors of another lockctl too (CONFORMANCE_LOCKCTL).
func TestMixedKeyspace(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	owner := holdAll(t, srv.addr)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { _ = rdb.Close() })
	writeShapes(t, rdb)

	locks, code := scanAll(t, srv.addr)
	errs := errorKeys(locks)
	t.Logf("healthy keyspace: %d keys, exit %d, %d with an error%s", len(locks), code, len(errs), listErrors(locks, errs))
	t.Logf("verdicts:\n%s", verdicts(locks, owner))
	if seen := seenKeys(locks, owner); seen < len(owner) {
		t.Logf("%d of the %d lock keys held were still there at the scan (fixed leases may run out on a loaded machine)", seen, len(owner))
	}
	if code != 0 || len(errs) > 0 {
		t.Errorf("inspect --pattern '*' --fail-on error exited %d over healthy locks; errors on %v", code, errs)
	}

	ctx := context.Background()
	must(t, rdb.Set(ctx, "horizon:lock:x", "1", 0).Err())
	must(t, rdb.Set(ctx, "lock:unit", randHex(16), 10*365*24*time.Hour).Err())
	locks, code = scanAll(t, srv.addr)
	if errs := errorKeys(locks); code != 1 || !slices.Equal(errs, []string{"horizon:lock:x", "lock:unit"}) {
		t.Errorf("with two faults: exit %d, errors on %v, want 1 on horizon:lock:x and lock:unit", code, errs)
	}
}

// holdAll starts a holder of every case whose lock is healthy (not one
// with NO_TTL, true of redis-py's and Laravel's defaults), in its crash
// longest fixed lease (holdMode), and returns each lock key's case.
// Three waves, each in parallel: the job queues (slowest to start), the
// locks that renew themselves, then the fixed leases (5 s and up), so
// those are still running at the scan.
func holdAll(t *testing.T, addr string) map[string]libCase {
	owner := map[string]libCase{}
	var mu sync.Mutex
	wave := func(c libCase) int {
		switch {
		case strings.HasPrefix(c.Lib, "bull"):
			return 0
		case c.Watchdog || c.Zset:
			return 1
		}
		return 2
	}
	for w := range 3 {
		t.Run(fmt.Sprintf("hold/wave%d", w), func(st *testing.T) {
			for _, c := range cases {
				if c.Short || slices.Contains(c.Need, "NO_TTL") || wave(c) != w {
					continue
				}
				st.Run(c.ID, func(ht *testing.T) {
					ht.Parallel()
					interpreter(ht, c.Driver)
					mode := holdMode(c)
					name := strings.ReplaceAll(c.Name, "%s", "mixed-"+strings.ReplaceAll(c.ID, "/", "-"))
					h := startHolderKept(ht, t, c, mode, addr, name)
					mu.Lock()
					defer mu.Unlock()
					for _, k := range h.Keys {
						owner[k] = c
					}
				})
			}
		})
	}
	return owner
}

// holdMode is the mode with the longest fixed lease of a case's driver: the
// crash mode, redsync's and redis-lock's longer ones, else the case's.
func holdMode(c libCase) string {
	switch {
	case c.CrashMode != "":
		return c.CrashMode
	case c.Lib == "redsync":
		return "ttl"
	case c.Lib == "redis-lock":
		return "long"
	}
	return c.Mode
}

// writeShapes writes healthy keys of generic shapes and asynq's keys
// (hibiken/asynq v0.25.1: internal/base/base.go's names, internal/rdb/rdb.go's
// enqueueUniqueCmd and dequeueCmd, heartbeat.go's server and worker keys).
func writeShapes(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	now := time.Now()
	id := uuid()
	srv := "{worker-1:4242:" + uuid() + "}"
	for _, err := range []error{
		c.Set(ctx, "shape:uuid", uuid(), time.Minute).Err(),
		c.Set(ctx, "shape:hex", randHex(20), time.Minute).Err(),
		c.Set(ctx, "shape:hostpid", "worker-7.example:4242", time.Minute).Err(),
		c.Set(ctx, "shape:uuidn", uuid()+":2", time.Minute).Err(),
		c.Set(ctx, "shape:marker", "*", time.Minute).Err(),
		c.Set(ctx, "shape:since", strconv.FormatInt(now.UnixMilli(), 10), time.Minute).Err(),
		c.Set(ctx, "shape:iso", now.UTC().Format(time.RFC3339), time.Minute).Err(),
		c.Set(ctx, "shape:composite", "web-1|"+uuid(), time.Minute).Err(),
		// A counter beside its lock (prefix), one sharing a hash tag, one alone.
		c.Set(ctx, "jobs:report", uuid(), time.Minute).Err(),
		c.Set(ctx, "jobs:report:fencing", "1", 0).Err(),
		c.Set(ctx, "lock:{invoice-7}", randHex(16), time.Minute).Err(),
		c.Set(ctx, "seq:{invoice-7}", "41", 0).Err(),
		c.Set(ctx, "stats:runs", "1", 0).Err(),
		// A semaphore of holders scored by acquire time (ms), a lease zset (s, no TTL).
		c.ZAdd(ctx, "sem:exports", redis.Z{Score: float64(now.UnixMilli()), Member: uuid()}, redis.Z{Score: float64(now.UnixMilli() - 50), Member: uuid()}).Err(),
		c.PExpire(ctx, "sem:exports", time.Minute).Err(),
		c.ZAdd(ctx, "leases:reports", redis.Z{Score: float64(now.Add(30 * time.Second).Unix()), Member: "task-9"}).Err(),
		// A hash lock with a TTL, a queue, an event stream.
		c.HSet(ctx, "hlock:billing", "owner", uuid(), "acquired_at", now.UnixMilli()).Err(),
		c.PExpire(ctx, "hlock:billing", time.Minute).Err(),
		c.RPush(ctx, "queue:emails", "a", "b").Err(),
		c.XAdd(ctx, &redis.XAddArgs{Stream: "events:locks", Values: []string{"k", "v"}}).Err(),
		// asynq, queue "default", one task running under a unique lock.
		c.Set(ctx, "asynq:{default}:unique:email:deliver:"+randHex(16), id, time.Hour).Err(),
		c.HSet(ctx, "asynq:{default}:t:"+id, "msg", "\x0a\x0demail:deliver", "state", "active").Err(),
		c.LPush(ctx, "asynq:{default}:active", id).Err(),
		c.LPush(ctx, "asynq:{default}:pending", uuid()).Err(),
		c.ZAdd(ctx, "asynq:{default}:lease", redis.Z{Score: float64(now.Add(30 * time.Second).Unix()), Member: id}).Err(),
		c.ZAdd(ctx, "asynq:{default}:scheduled", redis.Z{Score: float64(now.Add(time.Hour).Unix()), Member: uuid()}).Err(),
		c.Set(ctx, "asynq:{default}:processed", "17", 0).Err(),
		c.Set(ctx, "asynq:{default}:processed:"+now.UTC().Format("2006-01-02"), "3", 90*24*time.Hour).Err(),
		c.Set(ctx, "asynq:{default}:paused", strconv.FormatInt(now.Unix(), 10), 0).Err(),
		c.SAdd(ctx, "asynq:queues", "default").Err(),
		c.ZAdd(ctx, "asynq:servers", redis.Z{Score: float64(now.Add(10 * time.Second).Unix()), Member: "asynq:servers:" + srv}).Err(),
		c.Set(ctx, "asynq:servers:"+srv, "\x0a\x08worker-1\x10\x92\x21", 10*time.Second).Err(),
		c.HSet(ctx, "asynq:workers:"+srv, id, "\x0a\x08worker-1").Err(),
		c.Expire(ctx, "asynq:workers:"+srv, 10*time.Second).Err(),
	} {
		must(t, err)
	}
}

// scanAll runs inspect --pattern '*' --fail-on error -o jsonl.
func scanAll(t *testing.T, addr string) ([]lockJSON, int) {
	out, code := lockctlExit(t, addr, "inspect", "--pattern", "*", "--fail-on", "error", "-o", "jsonl")
	var locks []lockJSON
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l lockJSON
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Key != "" {
			locks = append(locks, l)
		}
	}
	return locks, code
}

// seenKeys counts the held lock keys the scan met.
func seenKeys(locks []lockJSON, owner map[string]libCase) int {
	n := 0
	for _, l := range locks {
		if _, ok := owner[l.Key]; ok {
			n++
		}
	}
	return n
}

// errorKeys are the keys with an error-severity finding, sorted.
func errorKeys(locks []lockJSON) []string {
	var keys []string
	for _, l := range locks {
		if slices.ContainsFunc(l.Findings, func(f findingJSON) bool { return f.Severity == "error" }) {
			keys = append(keys, l.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func listErrors(locks []lockJSON, keys []string) string {
	var b strings.Builder
	for _, l := range locks {
		if !slices.Contains(keys, l.Key) {
			continue
		}
		for _, f := range l.Findings {
			if f.Severity == "error" {
				fmt.Fprintf(&b, "\n  %s (%s): %s %s", l.Key, l.Layout.Name, f.Code, f.Message)
			}
		}
	}
	return b.String()
}

// verdicts is one line per key: for a case's key the layout it got, RIGHT
// when layoutRight, and the warnings and errors; for the other keys (the
// shapes, asynq's, the queues' companions) the layout and shape they got,
// the table of generic shapes (issue 40).
func verdicts(locks []lockJSON, owner map[string]libCase) string {
	var rows []string
	for _, l := range locks {
		var warn []string
		for _, f := range l.Findings {
			if f.Severity != "info" {
				warn = append(warn, f.Code+":"+f.Severity)
			}
		}
		c, ok := owner[l.Key]
		if !ok {
			rows = append(rows, fmt.Sprintf("  ~ %s: %s %s (shape %q, role %q) %v", l.Key, l.Layout.Name, l.Layout.Confidence, l.Layout.Shape, l.Role, warn))
			continue
		}
		v := "RIGHT"
		if !layoutRight(l, c.Layouts) {
			v = "WRONG"
		}
		rows = append(rows, fmt.Sprintf("  %s %s: %s %s (shape %q) %v", c.ID, l.Key, v, l.Layout.Name, l.Layout.Shape, warn))
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func uuid() string {
	h := randHex(16)
	h = h[:12] + "4" + h[13:16] + "8" + h[17:]
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
