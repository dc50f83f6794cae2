package inspect_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestGenericShapes: keys no layout explains are layout "unknown" with
// their shape described, no library named, and no error unless it is true
// whatever library wrote them (issue 27, docs/findings.md "Severity").
func TestGenericShapes(t *testing.T) {
	c := client(t)
	p := "g:" + redistest.Name(t) + ":"
	now := time.Now()
	cases := []struct {
		name, key string
		setup     func(k string)
		shape     string
		role      string
		findings  string
	}{
		{"uuid with TTL", p + "uuid", func(k string) { must(t, c.Set(ctx, k, guid(), 10*time.Second).Err()) }, inspect.ShapeUUID, "", ""},
		{"hex token", p + "hex", func(k string) { must(t, c.Set(ctx, k, randHex(16), 10*time.Second).Err()) }, inspect.ShapeHexToken, "", ""},
		{"uuid:n (BullMQ-like)", p + "uuidn", func(k string) { must(t, c.Set(ctx, k, guid()+":3", 10*time.Second).Err()) }, inspect.ShapeUUIDCounter, "", ""},
		{"host:pid", p + "hostpid", func(k string) { must(t, c.Set(ctx, k, "worker-7.example:4242", 10*time.Second).Err()) }, inspect.ShapeHostPID, "", ""},
		{"marker with TTL", p + "star", func(k string) { must(t, c.Set(ctx, k, "*", 10*time.Second).Err()) }, inspect.ShapeMarker, "", "CONSTANT_OWNER:warning"},
		{"marker without TTL", p + "lock:star-nottl", func(k string) { must(t, c.Set(ctx, k, "*", 0).Err()) }, inspect.ShapeMarker, "", "NO_TTL:error,CONSTANT_OWNER:warning"},
		{"marker without TTL, no lock's name", p + "flag", func(k string) { must(t, c.Set(ctx, k, "*", 0).Err()) }, inspect.ShapeMarker, "", "NO_TTL:warning,CONSTANT_OWNER:warning"},
		{"timestamp with TTL", p + "ts", func(k string) {
			must(t, c.Set(ctx, k, strconv.FormatInt(now.UnixMilli(), 10), 10*time.Second).Err())
		}, inspect.ShapeTimestamp, "", ""},
		{"timestamp without TTL, no lock's name", p + "paused", func(k string) {
			must(t, c.Set(ctx, k, strconv.FormatInt(now.Unix(), 10), 0).Err())
		}, inspect.ShapeTimestamp, "", "NO_TTL:warning"},
		{"timestamp without TTL", p + "mutex:ts-nottl", func(k string) {
			must(t, c.Set(ctx, k, strconv.FormatInt(now.Unix(), 10), 0).Err())
		}, inspect.ShapeTimestamp, "", "NO_TTL:error"},
		{"composite token", p + "comp", func(k string) { must(t, c.Set(ctx, k, "web-1|"+guid(), 10*time.Second).Err()) }, inspect.ShapeComposite, "", ""},
		{"time:token is no lockctl fence", p + "timetok", func(k string) {
			must(t, c.Set(ctx, k, strconv.FormatInt(now.UnixMilli(), 10)+":"+randHex(16), 10*time.Second).Err())
		}, inspect.ShapeComposite, "", ""},
		{"counter alone", p + "jobs-seen", func(k string) { must(t, c.Set(ctx, k, "1", 0).Err()) }, inspect.ShapeCounter, "", ""},
		{"fence counter beside its lock", p + "mylock:fencing", func(k string) {
			must(t, c.Set(ctx, p+"mylock", guid(), 10*time.Second).Err())
			must(t, c.Set(ctx, k, "1", 0).Err())
		}, inspect.ShapeCounter, inspect.RoleCounter, ""},
		{"index counter sharing a hash tag", "idx:{" + p + "res}", func(k string) {
			must(t, c.Set(ctx, "lock:{"+p+"res}", guid(), 10*time.Second).Err())
			must(t, c.Set(ctx, k, "7", 0).Err())
		}, inspect.ShapeCounter, inspect.RoleCounter, ""},
		{"lease zset (deadlines in s, no TTL)", p + "lease", func(k string) {
			must(t, c.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(30 * time.Second).Unix()), Member: guid()}).Err())
		}, inspect.ShapeTimeZset, "", ""},
		{"holder zset (acquire ms, TTL)", p + "holders", func(k string) {
			must(t, c.ZAdd(ctx, k, redis.Z{Score: float64(now.UnixMilli()), Member: "h1"}, redis.Z{Score: float64(now.UnixMilli() - 10), Member: "h2"}).Err())
			must(t, c.PExpire(ctx, k, 10*time.Second).Err())
		}, inspect.ShapeTimeZset, "", ""},
		{"hash lock with TTL", p + "hash", func(k string) {
			must(t, c.HSet(ctx, k, "owner", guid(), "acquired_at", now.UnixMilli()).Err())
			must(t, c.PExpire(ctx, k, 30*time.Second).Err())
		}, inspect.ShapeHash, "", ""},
		{"list (a queue)", p + "queue", func(k string) { must(t, c.RPush(ctx, k, "job-1").Err()) }, inspect.ShapeContainer, "", "WRONG_TYPE:info,NO_TTL:info"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(tc.key)
			l := readOne(t, c, tc.key, inspect.Options{})
			if l.Layout.Name != "unknown" || l.Layout.Shape != tc.shape || l.Layout.Description == "" || l.Role != tc.role {
				t.Errorf("layout %+v role %q, want unknown shape %s role %q", l.Layout, l.Role, tc.shape, tc.role)
			}
			if got := codes(l); got != tc.findings {
				t.Errorf("findings %s, want %q: %+v", got, tc.findings, l.Findings)
			}
		})
	}
}

// Case 1 stays: an integer under a lock's name with no TTL is a lock value.
func TestCounterUnderLockName(t *testing.T) {
	c := client(t)
	k := "horizon:lock:x:" + redistest.Name(t)
	must(t, c.Set(ctx, k, "1", 0).Err())
	if l := readOne(t, c, k, inspect.Options{}); codes(l) != "NO_TTL:error,CONSTANT_OWNER:warning" || l.Role != "" {
		t.Errorf("findings %s role %q", codes(l), l.Role)
	}
}
