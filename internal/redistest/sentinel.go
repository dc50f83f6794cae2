package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the test sentinel monitors its primary under.
const MasterName = "mymaster"

// Sentinel is a primary, one replica and one sentinel monitoring them.
type Sentinel struct {
	// Primary and Replica are the data nodes as started; after Failover
	// their roles are swapped (ask MasterAddr).
	Primary, Replica *Server
	// Sentinel is the redis-server --sentinel process.
	Sentinel *Server
}

// Addr returns the sentinel's host:port.
func (s *Sentinel) Addr() string { return s.Sentinel.Addr }

// URL returns redis+sentinel://<sentinel>/mymaster/0 (docs/connecting.md,
// "Connecting to Redis").
func (s *Sentinel) URL() string {
	return "redis+sentinel://" + s.Sentinel.Addr + "/" + MasterName + "/0"
}

// Stop stops the sentinel and both data nodes.
func (s *Sentinel) Stop() {
	for _, n := range []*Server{s.Sentinel, s.Replica, s.Primary} {
		if n != nil {
			n.Stop()
		}
	}
}

// StartSentinel starts a primary, a replica of it and a sentinel (quorum 1,
// down-after 1s) watching them, and returns once the replica is in sync and
// the sentinel knows it, so Failover can promote it. Everything is stopped
// when tb ends.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	s, err := LaunchSentinel()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// LaunchSentinel is StartSentinel without a test: the caller must Stop it.
func LaunchSentinel() (*Sentinel, error) {
	s := &Sentinel{}
	var err error
	// No delay before a diskless full sync, so the replica is ready at once.
	if s.Primary, err = Launch("--repl-diskless-sync-delay", "0"); err != nil {
		return nil, err
	}
	if s.Replica, err = Launch("--replicaof", "127.0.0.1", strconv.Itoa(s.Primary.Port), "--repl-diskless-sync-delay", "0"); err != nil {
		s.Stop()
		return nil, err
	}
	primaryPort := s.Primary.Port
	s.Sentinel, err = launch(func(port int, dir string) []string {
		conf := filepath.Join(dir, "sentinel.conf")
		// Sentinel rewrites its config file, so it lives in the server's dir.
		_ = os.WriteFile(conf, []byte(fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]d 1
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 5000
sentinel parallel-syncs %[1]s 1
`, MasterName, primaryPort)), 0o600)
		return []string{conf, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
	})
	if err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.waitReplica(s.Replica.Addr, 30*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReplica waits until the replica at addr has its link to the primary
// up and the sentinel lists it as a healthy replica.
func (s *Sentinel) waitReplica(addr string, limit time.Duration) error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	deadline := time.Now().Add(limit)
	for {
		info, _ := rdb.Info(ctx, "replication").Result()
		replicas, _ := sc.Replicas(ctx, MasterName).Result()
		if strings.Contains(info, "master_link_status:up") && knownReplica(replicas, addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not ready after %s: %q, sentinel sees %v", addr, limit, info, replicas)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func knownReplica(replicas []map[string]string, addr string) bool {
	for _, r := range replicas {
		if net.JoinHostPort(r["ip"], r["port"]) == addr && r["flags"] == "slave" && r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// MasterAddr asks the sentinel which host:port is the primary now.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel answered %v for %s", hp, MasterName)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Failover forces SENTINEL FAILOVER and waits until the sentinel names a new
// primary and that node reports role:master; it returns the new primary's
// host:port. It fails the test after 30s.
func (s *Sentinel) Failover(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	old, err := s.MasterAddr(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	deadline := time.Now().Add(30 * time.Second)
	// FAILOVER is refused (INPROG, NOGOODSLAVE) while the sentinel is still
	// settling; retry until it is accepted.
	for {
		err := sc.Failover(ctx, MasterName).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("SENTINEL FAILOVER %s: %v", MasterName, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		addr, err := s.MasterAddr(ctx)
		if err == nil && addr != old {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			info, _ := rdb.Info(ctx, "replication").Result()
			_ = rdb.Close()
			if strings.Contains(info, "role:master") {
				return addr
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no new primary after SENTINEL FAILOVER: sentinel names %s (was %s), %v", addr, old, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
