package cmd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// fillLocks writes n lockctl-shaped locks prefix:0..n-1 with TTLs from 10 minutes to 70.
func fillLocks(t *testing.T, rdb *redis.Client, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += 5000 {
		pipe := rdb.Pipeline()
		for i := start; i < min(n, start+5000); i++ {
			pipe.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), fmt.Sprintf("%d:owner-%d", i, i), time.Duration(600+i%3600)*time.Second)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Peak memory of inspect --pattern -o json and -o yaml does not grow with
// the number of locks: the document is streamed from sorted runs instead
// of built whole (1M keys took 6.4 GB as json, 6.7 GB as yaml). json:
// 80,000 locks against 20,000; yaml, slower to write: 30,000 against
// 10,000. The whole document grew with them (json 300 MB at 80,000, yaml
// 2.8 GB); streamed the peaks stay within 1.5 times of each other. The
// smaller sets are past the sorter's 4 MiB in memory: released, json took
// 36 MB at 10,000 locks, then 46 MB from 20,000 on (50 MB at 240,000).
// Each peak is the lower of two runs: beside two CPU burners, a run now and
// then peaks higher (yaml 65-71 MB against 40-54 MB, at 10,000 locks as at
// 30,000: the GC fell behind a burst of allocation on a starved CPU;
// GODEBUG=gctrace=1 showed a 42-49 MB heap).
func TestScanOutputBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	sizes := map[string]int{"few": 10000, "mid": 20000, "many": 80000, "many:yaml": 30000}
	for prefix, n := range sizes {
		fillLocks(t, rdb, prefix, n)
	}
	for _, c := range []struct {
		format, few, many string
	}{{"json", "mid", "many"}, {"yaml", "few", "many:yaml"}} {
		peak := map[string]int64{}
		for _, prefix := range []string{c.few, c.many} {
			for range 2 { // the lower of two runs: a spike is the GC's, not the size's
				p, code, rss := runPeak(t, srv.URL(), "inspect", "--pattern", prefix+":[0-9]*", "-o", c.format)
				mark := `"key": "` + prefix + `:`
				if c.format == "yaml" {
					mark = "  - key: " + prefix + ":"
				}
				if got := strings.Count(p.stdout.String(), mark); code != 0 || got != sizes[prefix] {
					t.Fatalf("-o %s over %d locks: exit %d, %d locks printed: %.300s", c.format, sizes[prefix], code, got, p.stderr.String())
				}
				if peak[prefix] == 0 || rss < peak[prefix] {
					peak[prefix] = rss
				}
			}
		}
		few, many := peak[c.few], peak[c.many]
		t.Logf("-o %s: peak RSS %d MB at %d locks, %d MB at %d", c.format, few>>20, sizes[c.few], many>>20, sizes[c.many])
		if many*2 >= few*3 {
			t.Errorf("-o %s: peak RSS %d MB over %d locks, want under 1.5 times the %d MB over %d", c.format, many>>20, sizes[c.many], few>>20, sizes[c.few])
		}
	}
}
