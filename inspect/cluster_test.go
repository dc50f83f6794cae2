package inspect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestScanClusterCompanion: on a cluster, a scan reads each key through the
// cluster client, so a companion on another primary's slot is read where it
// is (python-redis-lock's lock-signal list: certain, as inspect --key says).
// Read through the scanned node, it got MOVED and was taken for absent
// (likely), and a slot migrating during the scan gave its keys as strings
// with no value (CONSTANT_OWNER "", SUBSECOND_LEASE).
func TestScanClusterCompanion(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	must(t, c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }))
	name := ""
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("res%d", i)
		a, err := c.MasterForKey(ctx, "lock:"+n)
		must(t, err)
		b, err := c.MasterForKey(ctx, "lock-signal:"+n)
		must(t, err)
		if a.Options().Addr != b.Options().Addr {
			name = n
		}
	}
	// python-redis-lock ≥ 3.3 id: b64encode(urandom(18)), 24 characters, no "=".
	must(t, c.Set(ctx, "lock:"+name, "UuD4gq/mCzUjken8FHe/uSWP", time.Minute).Err())
	must(t, c.RPush(ctx, "lock-signal:"+name, "x").Err())
	r := &inspect.Reader{Light: true, Options: inspect.Options{Cluster: true}}
	var got []inspect.Lock
	must(t, r.Scan(ctx, c, inspect.ScanOptions{Pattern: "lock:*"}, func(l inspect.Lock) error {
		got = append(got, l)
		return nil
	}))
	if len(got) != 1 || got[0].Layout.Name != "python-redis-lock" || got[0].Layout.Confidence != inspect.Certain {
		t.Errorf("scan: %+v", got)
	}
}
