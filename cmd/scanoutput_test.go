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
// of built whole (1M keys took 6.4 GB as json, 6.7 GB as yaml). 80,000
// locks against 10,000 (30,000 for yaml, slower to write; all past the
// 4 MiB kept in memory), side by side: the whole document grew with them
// (json 300 MB at 80,000, yaml 2.8 GB); streamed the peaks stay within 1.5
// times of each other.
func TestScanOutputBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	fillLocks(t, rdb, "few", 10000)
	fillLocks(t, rdb, "many", 80000)
	fillLocks(t, rdb, "many:yaml", 30000) // YAML is slow to write: fewer
	for _, format := range []string{"json", "yaml"} {
		sizes := map[string]int{"few": 10000, "many": 80000}
		if format == "yaml" {
			sizes = map[string]int{"few": 10000, "many:yaml": 30000}
		}
		peak := map[string]int64{}
		for prefix, n := range sizes {
			p, code, rss := runPeak(t, srv.URL(), "inspect", "--pattern", prefix+":[0-9]*", "-o", format)
			mark := `"key": "` + prefix + `:`
			if format == "yaml" {
				mark = "  - key: " + prefix + ":"
			}
			if got := strings.Count(p.stdout.String(), mark); code != 0 || got != n {
				t.Fatalf("-o %s over %d locks: exit %d, %d locks printed: %.300s", format, n, code, got, p.stderr.String())
			}
			peak[prefix] = rss
		}
		many := "many"
		if format == "yaml" {
			many = "many:yaml"
		}
		t.Logf("-o %s: peak RSS %d MB at %d locks, %d MB at %d", format, peak["few"]>>20, sizes["few"], peak[many]>>20, sizes[many])
		if peak[many]*2 >= peak["few"]*3 {
			t.Errorf("-o %s: peak RSS %d MB over %d locks, want under 1.5 times the %d MB over %d", format, peak[many]>>20, sizes[many], peak["few"]>>20, sizes["few"])
		}
	}
}
