package cmd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// runPeak runs lockctl as released (releasedLockctl) and returns its peak
// resident memory in bytes: VmHWM of /proc/PID/status, polled every
// millisecond while it runs (a lower bound; the rusage of a child started
// from this test binary counts this binary's memory too, as Go starts it
// with vfork). A run that ended before the first poll, as a quick one can
// on a loaded machine, is run again, up to 5 times.
func runPeak(t *testing.T, url string, args ...string) (*proc, int, int64) {
	t.Helper()
	for range 4 {
		if p, code, peak := peakOnce(t, url, args...); peak > 0 {
			return p, code, peak
		}
	}
	p, code, peak := peakOnce(t, url, args...)
	if peak == 0 {
		t.Fatalf("lockctl %s: 5 runs, each over before its memory could be read", strings.Join(args, " "))
	}
	return p, code, peak
}

// peakOnce is one run of runPeak: 0 bytes when no poll saw the process.
func peakOnce(t *testing.T, url string, args ...string) (*proc, int, int64) {
	t.Helper()
	p := startProc(t, url, exec.Command(releasedLockctl(t), args...))
	status := fmt.Sprintf("/proc/%d/status", p.Process.Pid)
	if _, err := os.Stat(status); err != nil {
		t.Skip("no /proc on this platform")
	}
	done := make(chan struct{})
	var peak atomic.Int64
	go func() {
		for {
			b, _ := os.ReadFile(status)
			if _, rest, ok := strings.Cut(string(b), "VmHWM:"); ok {
				f := strings.Fields(rest)
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb<<10 > peak.Load() {
					peak.Store(kb << 10)
				}
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	code := p.exit(t)
	close(done)
	return p, code, peak.Load()
}

// hugeValuesExtra bounds what 500 values of 512 KB may add to a scan's
// peak memory: 4 parts in flight × inspect.PipelineBytes, each value held
// up to 4 times (go-redis's reply, the Lock, its JSON, the output buffer),
// doubled by the GC's headroom: 64 MiB, a quarter of the values' 250 MB
// (the old reads held 64 KB per key: a page of 500, 32 MB, at once).
const hugeValuesExtra = 4 * inspect.PipelineBytes * 4 * 2

// Peak memory of inspect --pattern does not grow with the values: 500 keys
// of 512 KB (250 MB in Redis) took about 3 times the peak of 500 keys of
// 1 byte when each page was read in one pipeline of 64 KB per key. Now a
// page is read in parts of inspect.PipelineBytes (4 KB per key), at most
// scanWorkers (4) parts at once, so the values add at most 4 parts in
// flight: under hugeValuesExtra. Measured released, beside two CPU
// burners: 24 MB for 1-byte values, 14-31 MB more for 512 KB.
// And unlock and run on a key of 64 MB print under 10 KB and read under
// 1 MiB of it.
func TestHugeValuesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	// No read or write timeout: 250 MB in one pipeline can take over go-redis's 3s on a loaded machine.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: -1, WriteTimeout: -1})
	defer rdb.Close()
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
	if extra := peak["big"] - peak["small"]; extra >= hugeValuesExtra {
		t.Errorf("inspect --pattern over 500 values of 512 KB: peak RSS %d MB, %d MB over the %d MB of 500 values of 1 byte; want under %d MB more",
			peak["big"]>>20, extra>>20, peak["small"]>>20, hugeValuesExtra>>20)
	}

	// These runs are too quick to poll their memory (5 runs of unlock, each
	// over before the first poll): what the server sent them shows that
	// they never read the 64 MB value, and what they print is bounded.
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
		before := netOutput(t, rdb)
		p, code := runLockctl(t, srv.URL(), args...)
		sent := netOutput(t, rdb) - before
		out := p.stdout.Len() + p.stderr.Len()
		t.Logf("%s: %d bytes sent by the server", args[0], sent)
		if code != want || out > 10<<10 || sent > 1<<20 {
			t.Errorf("%s: exit %d, %d bytes of output, %d bytes sent by the server; want exit %d, under 10 KB, under 1 MiB: %.300s",
				strings.Join(args, " "), code, out, sent, want, p.stderr.String())
		}
	}
}

// netOutput is the bytes the server has sent its clients (INFO stats
// total_net_output_bytes).
func netOutput(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info := rdb.InfoMap(context.Background(), "stats")
	n, err := strconv.ParseInt(info.Item("Stats", "total_net_output_bytes"), 10, 64)
	if err != nil {
		t.Fatalf("total_net_output_bytes in INFO stats: %v (%v)", err, info.Err())
	}
	return n
}
