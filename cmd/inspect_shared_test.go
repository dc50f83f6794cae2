package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// seedSemaphore writes a redis-semaphore (npm 5.8.0) Semaphore with three
// holders, as its acquire script leaves it (lib/semaphore/acquire/lua.js):
// ZADD semaphore:<name> <Date.now()> <crypto.randomUUID()>, PEXPIRE 10000.
func seedSemaphore(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	ids := []string{"0b7e5e4a-56a4-4d0c-9d0e-5a3f1c2b9e01", "6f1c2a3b-7d8e-4f90-a1b2-c3d4e5f60718", "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}
	now := time.Now().UnixMilli()
	for i, id := range ids {
		if err := c.ZAdd(context.Background(), key, redis.Z{Score: float64(now - int64(3-i)*1000), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PExpireAt(context.Background(), key, time.UnixMilli(now-1000+10000)).Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestInspectPermits runs inspect and watch on a semaphore with three live
// holders: --permits 2 is OVER_ADMITTED (an error: --fail-on error exits 1),
// --permits 3 is not; the table lists the holders.
func TestInspectPermits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	key := "semaphore:exports"
	ids := seedSemaphore(t, srv.Client(t), key)
	io, out, errOut := testIO()
	if code := Execute([]string{"inspect", "--key", key, "--permits", "2", "-o", "json", "--redis", srv.URL()}, io); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Locks []struct {
			Layout       struct{ Name string }
			PermitsInUse *int64 `json:"permits_in_use"`
			Holders      []struct {
				Owner   string
				AgeMS   *int64 `json:"age_ms"`
				TTLMS   *int64 `json:"ttl_ms"`
				Expired bool
			}
			Findings []struct{ Code string }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	l := rep.Locks[0]
	var codes []string
	for _, f := range l.Findings {
		codes = append(codes, f.Code)
	}
	if l.Layout.Name != "redis-semaphore" || l.PermitsInUse == nil || *l.PermitsInUse != 3 || len(l.Holders) != 3 ||
		l.Holders[0].Owner != ids[0] || l.Holders[0].AgeMS == nil || l.Holders[0].TTLMS == nil || !strings.Contains(strings.Join(codes, ","), "OVER_ADMITTED") {
		t.Errorf("report %s", out)
	}
	io, out, errOut = testIO()
	if code := Execute([]string{"inspect", "--key", key, "--permits", "3", "--fail-on", "error", "--redis", srv.URL()}, io); code != 0 {
		t.Errorf("--permits 3: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out.String(), "semaphore:exports: 3 holders, 3 permits in use: 0b7e5e4a-56a4-4d0c-9d0e-5a3f1c2b9e01 (age 3") {
		t.Errorf("table:\n%s", out)
	}
	io, _, _ = testIO()
	if code := Execute([]string{"inspect", "--key", key, "--permits", "2", "--fail-on", "error", "--redis", srv.URL()}, io); code != ExitCheckFailed {
		t.Errorf("--permits 2 --fail-on error: exit %d", code)
	}
	io, out, errOut = testIO()
	if code := Execute([]string{"watch", "--key", key, "--permits", "2", "--interval", "50ms", "--duration", "300ms", "-o", "jsonl", "--redis", srv.URL()}, io); code != 0 {
		t.Fatalf("watch: exit %d: %s", code, errOut)
	}
	if n := strings.Count(out.String(), `"event":"OVER_ADMITTED"`); n != 1 || !strings.Contains(out.String(), `"event":"HELD"`) {
		t.Errorf("watch: %d OVER_ADMITTED events, want 1 (one per episode):\n%s", n, out)
	}
}

func TestPermitsFlag(t *testing.T) {
	o, w, err := parseInspect(t, "inspect", "--key", "k", "--permits", "5")
	if err != nil || o.Permits != 5 {
		t.Fatalf("inspect --permits 5: %v %+v", err, o)
	}
	if _, w, err = parseInspect(t, "watch", "--key", "k", "--permits", "2"); err != nil || w.Permits != 2 {
		t.Fatalf("watch --permits 2: %v %+v", err, w)
	}
	for _, cmd := range []string{"inspect", "watch"} {
		for v, want := range map[string]string{
			"0":   "permits 0 must be at least 1",
			"-3":  "permits -3 must be at least 1",
			"abc": `--permits "abc" is not a whole number`,
			"2.5": `--permits "2.5" is not a whole number`,
		} {
			_, _, err := parseInspect(t, cmd, "--key", "k", "--permits", v)
			if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != ExitUsage {
				t.Errorf("%s --permits %s: %v (exit %d), want %q", cmd, v, err, exitCode(err), want)
			}
		}
	}
}
