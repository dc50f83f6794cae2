package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockctl/lockctl/internal/redisproc"
)

// Cluster is a running Redis Cluster of primaries only (no replicas).
type Cluster struct {
	// Nodes are the primaries, each owning a share of the 16384 slots.
	Nodes []*Server
}

// Addrs returns the host:port of every node.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// URL returns redis+cluster://host:port,host:port,... (docs/connecting.md,
// "Connecting to Redis").
func (c *Cluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs(), ",") }

// Client returns a go-redis cluster client, closed when tb ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// StartCluster starts n primaries (n ≥ 3, Redis' minimum) with
// cluster-enabled on free loopback ports, each with its cluster bus on a
// second free port, joins them with `redis-cli --cluster create
// --cluster-yes` and waits until every node reports cluster_state:ok. The
// cluster is stopped when tb ends.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := LaunchCluster(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// LaunchCluster is StartCluster without a test: the caller must Stop it.
func LaunchCluster(n int) (*Cluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("a Redis Cluster needs at least 3 primaries, not %d", n)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not found on PATH: the cluster tests need it; install Debian's package (apt-get install redis-tools)")
	}
	c := &Cluster{}
	for range n {
		bus, err := redisproc.FreePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		s, err := Launch("--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	create := exec.Command(cli, args...)
	// The nodes have no password: an AUTH from the caller's REDISCLI_AUTH
	// would be refused.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDISCLI_AUTH=") {
			create.Env = append(create.Env, kv)
		}
	}
	if out, err := create.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(string(out)))
	}
	if err := c.waitOK(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitOK polls CLUSTER INFO on every node until all say cluster_state:ok.
func (c *Cluster) waitOK(limit time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	for _, n := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = rdb.Close()
				return fmt.Errorf("cluster node %s not ok after %s: %v %s", n.Addr, limit, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}
