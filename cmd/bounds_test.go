package cmd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
)

// runPeak runs lockctl like runLockctl and returns its peak resident
// memory in bytes: VmHWM of /proc/PID/status, polled every millisecond
// while it runs (a lower bound; the rusage of a child started from this
// test binary counts this binary's memory too).
func runPeak(t *testing.T, url string, args ...string) (*proc, int, int64) {
	t.Helper()
	p := startLockctl(t, url, args...)
	status := fmt.Sprintf("/proc/%d/status", p.Process.Pid)
	if _, err := os.Stat(status); err != nil {
		t.Skip("no /proc on this platform")
	}
	done := make(chan struct{})
	var peak atomic.Int64
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			b, _ := os.ReadFile(status)
			if _, rest, ok := strings.Cut(string(b), "VmHWM:"); ok {
				f := strings.Fields(rest)
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb<<10 > peak.Load() {
					peak.Store(kb << 10)
				}
			}
		}
	}()
	code := p.exit(t)
	close(done)
	return p, code, peak.Load()
}

// Peak memory of inspect --pattern does not grow with the values: 500 keys
// of 512 KB (250 MB in Redis) took about 3 times the peak of 500 keys of
// 1 byte when each page was read in one pipeline of 64 KB per key; now
// parts of PipelineBytes, 4 KB per key, and under 2 times (about 1.7, with
// -race or without: measured side by side, as the race detector's own
// memory varies with the machine's load). And unlock and run on a key of
// 64 MB print under 10 KB and stay small.
func TestHugeValuesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	peak := map[string]int64{}
	for _, c := range []struct {
		prefix string
		size   int
	}{{"small", 1}, {"big", 512 << 10}} {
		val := bytes.Repeat([]byte("x"), c.size)
		pipe := rdb.Pipeline()
		for i := range 500 {
			pipe.Set(ctx, fmt.Sprintf("%s:%d", c.prefix, i), val, time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		p, code, rss := runPeak(t, srv.URL(), "inspect", "--pattern", c.prefix+":*", "-o", "jsonl")
		if n := strings.Count(p.stdout.String(), `"key":"`+c.prefix+`:`); code != 0 || n != 500 {
			t.Fatalf("inspect --pattern %s:*: exit %d, %d lines: %.300s", c.prefix, code, n, p.stderr.String())
		}
		peak[c.prefix] = rss
	}
	t.Logf("peak small %d MB big %d MB", peak["small"]>>20, peak["big"]>>20)
	if peak["big"] >= 2*peak["small"] {
		t.Errorf("inspect --pattern over 500 values of 512 KB: peak RSS %d MB, want under twice the %d MB of 500 values of 1 byte", peak["big"]>>20, peak["small"]>>20)
	}

	if err := rdb.Set(ctx, "lock:huge", "7:"+strings.Repeat("y", 64<<20), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"unlock", "--key", "lock:huge", "--owner", "nobody", "-o", "json"},
		{"unlock", "--key", "lock:huge", "--owner", "nobody"},
		{"run", "--key", "lock:huge", "--budget", "10s", "--", "true"},
		{"run", "--key", "lock:huge", "--budget", "10s", "--wait", "1s", "--", "true"},
	} {
		want := 1 // unlock: not the owner
		if args[0] == "run" {
			want = 75 // held (EX_TEMPFAIL)
		}
		p, code, rss := runPeak(t, srv.URL(), args...)
		out := p.stdout.Len() + p.stderr.Len()
		if code != want || out > 10<<10 || rss > 100<<20 {
			t.Errorf("%s: exit %d, %d bytes of output, peak RSS %d MB; want exit %d, under 10 KB, under 100 MB: %.300s",
				strings.Join(args, " "), code, out, rss>>20, want, p.stderr.String())
		}
	}
}
