package checklist

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestCrossCheck compares the init template with live keys on a real Redis:
// a missing fence counter and a PTTL above the lease fail with the observed
// values; matching keys leave the verdicts alone; nothing is written.
func TestCrossCheck(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	spec, err := ParseSpec("order-import.yaml", Template())
	if err != nil {
		t.Fatal(err)
	}
	// The template: lock:OrderId:<value>, fence {lock:OrderId:<value>}:fence, lease 1m.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.Set(ctx, "lock:OrderId:drifted", "17:0123456789abcdef0123456789abcdef", 15*time.Minute).Err())
	must(rdb.Set(ctx, "lock:OrderId:forever", "17:0123456789abcdef0123456789abcdef", 0).Err())
	must(rdb.Set(ctx, "{lock:OrderId:forever}:fence", "17", 0).Err())
	must(rdb.Set(ctx, "lock:OrderId:healthy", "18:0123456789abcdef0123456789abcdef", 40*time.Second).Err())
	must(rdb.Set(ctx, "{lock:OrderId:healthy}:fence", "18", 0).Err())
	must(rdb.ConfigResetStat(ctx).Err())

	tests := []struct {
		value       string
		fence       Status
		fenceReason string
		lease       Status
		leaseReason string
	}{
		{"drifted", StatusFail, "live: the spec claims a fence counter but {lock:OrderId:drifted}:fence does not exist", StatusFail, "above the spec's lease 1m (60000ms)"},
		{"forever", StatusPass, "", StatusFail, "live: lock:OrderId:forever has no expiry (PTTL -1)"},
		{"healthy", StatusPass, "", StatusPass, ""},
		{"absent", StatusFail, "does not exist (lock lock:OrderId:absent PTTL -2, absent)", StatusPass, ""},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			r, err := Evaluate([]*Spec{spec}, defaults())
			if err != nil {
				t.Fatal(err)
			}
			if err := CrossCheck(ctx, rdb, r, []*Spec{spec}, tc.value, defaults()); err != nil {
				t.Fatal(err)
			}
			fence, lease := item(t, r.Tasks[0], "commit_check.fence-counter"), item(t, r.Tasks[0], "lease.matches-policy")
			if fence.Status != tc.fence || !strings.Contains(fence.Reason, tc.fenceReason) {
				t.Errorf("fence-counter = %s %q", fence.Status, fence.Reason)
			}
			if lease.Status != tc.lease || !strings.Contains(lease.Reason, tc.leaseReason) {
				t.Errorf("matches-policy = %s %q", lease.Status, lease.Reason)
			}
			if tc.fence == StatusFail && fence.Line != spec.Line("lock.fencing") {
				t.Errorf("fence-counter line %d, want the lock.fencing line", fence.Line)
			}
			if r.Summary.Fail != map[Status]int{StatusFail: 1}[tc.fence]+map[Status]int{StatusFail: 1}[tc.lease] {
				t.Errorf("summary %+v not recounted", r.Summary)
			}
			if o := r.Tasks[0].Live; o == nil || o.LockKey != "lock:OrderId:"+tc.value {
				t.Errorf("live observation %+v", o)
			}
		})
	}
	healthy := func() *Observation {
		r, _ := Evaluate([]*Spec{spec}, defaults())
		must(CrossCheck(ctx, rdb, r, []*Spec{spec}, "healthy", defaults()))
		return r.Tasks[0].Live
	}()
	if !healthy.FenceExists || healthy.Fence != "18" || healthy.PTTLMS <= 0 || healthy.PTTLMS > 40000 {
		t.Errorf("healthy observation %+v", healthy)
	}
	if healthy.ValueHex != "" || healthy.LockKeyHex != "" || healthy.FenceKeyHex != "" {
		t.Errorf("UTF-8 value and keys have a hex form: %+v", healthy)
	}
	// A value that is not UTF-8 shows as U+FFFD in JSON; the *_hex fields
	// name the bytes.
	r, err := Evaluate([]*Spec{spec}, defaults())
	must(err)
	must(CrossCheck(ctx, rdb, r, []*Spec{spec}, "o\xff", defaults()))
	if o := r.Tasks[0].Live; o.ValueHex != "6fff" || o.LockKeyHex != "6c6f636b3a4f7264657249643a6fff" || o.FenceKeyHex != "7b6c6f636b3a4f7264657249643a6fff7d3a66656e6365" {
		t.Errorf("non-UTF-8 value: %+v", o)
	}
	// Read-only: the server saw only PTTL, EXISTS and GET (and our INFO).
	stats, err := rdb.Info(ctx, "commandstats").Result()
	must(err)
	for _, line := range strings.Split(stats, "\n") {
		name, _, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		switch name {
		case "pttl", "exists", "get", "info", "config|resetstat":
		default:
			t.Errorf("the cross-check issued %s", name)
		}
	}
}

// TestCrossCheckRefused: a read the ACL refuses names the command and the
// key, as inspect does ("GET \"{lock:OrderId:x}:fence\": NOPERM ..."), for a
// command and for a key outside the user's patterns.
func TestCrossCheckRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	spec, err := ParseSpec("order-import.yaml", Template())
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "{lock:OrderId:acl}:fence", "3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		rules []any
		want  string
	}{
		{"noget", []any{"~*", "+@all", "-get"}, `GET "{lock:OrderId:acl}:fence": NOPERM`},
		{"nokey", []any{"~lock:*", "+@all"}, `EXISTS "{lock:OrderId:acl}:fence": NOPERM`},
		{"nopttl", []any{"~*", "+@all", "-pttl"}, `PTTL "lock:OrderId:acl": NOPERM`},
	} {
		if err := rdb.Do(ctx, append([]any{"ACL", "SETUSER", tc.name, "on", ">pw"}, tc.rules...)...).Err(); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: tc.name, Password: "pw"})
		r, err := Evaluate([]*Spec{spec}, defaults())
		if err != nil {
			t.Fatal(err)
		}
		err = CrossCheck(ctx, c, r, []*Spec{spec}, "acl", defaults())
		_ = c.Close()
		var re *inspect.ReadError
		if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %s...", tc.name, err, tc.want)
		}
	}
}
