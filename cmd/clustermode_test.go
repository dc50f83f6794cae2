package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// oneLine fails the test unless stderr is one line holding every want,
// followed by nothing or, on exit 2, the usage hint every usage error has.
func oneLine(t *testing.T, what, stderr string, want ...string) {
	t.Helper()
	first, rest, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	if first == "" || (rest != "" && !strings.HasPrefix(rest, "Run 'lockctl ") || strings.Contains(rest, "\n")) {
		t.Errorf("%s: stderr is not one line: %q", what, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr %q lacks %q", what, stderr, w)
		}
	}
}

// valueOffNode returns a business value whose lock key (cluster key spec)
// is served by a primary other than addr.
func valueOffNode(t *testing.T, rdb *redis.ClusterClient, addr, prefix string) string {
	t.Helper()
	ks, err := lockcore.NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		v := fmt.Sprintf("%s-%d", prefix, i)
		n, err := rdb.MasterForKey(bg, ks.Keys(v).Lock)
		if err != nil {
			t.Fatal(err)
		}
		if n.Options().Addr != addr {
			return v
		}
	}
	t.Fatalf("no value off node %s", addr)
	return ""
}

// TestClusterPlainURL points every command at one node of a 3-primary
// cluster with a plain redis:// URL (issue 19 §5): lockctl sees the node is
// a cluster node, says so once on stderr and uses the whole cluster, so a
// scan lists the locks of every primary and a key on another primary is no
// bare MOVED.
func TestClusterPlainURL(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	node := c.Nodes[0].Addr
	plain := "redis://" + node
	note := node + " is a cluster node: using the cluster (redis+cluster:// says so up front)"
	ks, err := lockcore.NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}

	// 300 locks with a TTL, spread over the three primaries, and one
	// without a TTL on a primary other than the one in the URL.
	pipe := rdb.Pipeline()
	for i := range 300 {
		pipe.Set(bg, fmt.Sprintf("lock:OrderId:plain-%03d", i), fmt.Sprintf("owner-%d", i), 50*time.Second)
	}
	if _, err := pipe.Exec(bg); err != nil {
		t.Fatal(err)
	}
	noTTL := valueOffNode(t, rdb, node, "plain-nottl")
	if err := rdb.Set(bg, ks.Keys(noTTL).Lock, "stuck-owner", 0).Err(); err != nil {
		t.Fatal(err)
	}
	onNode, err := c.Nodes[0].Client(t).DBSize(bg).Result()
	if err != nil || onNode >= 300 {
		t.Fatalf("node %s holds %d of the keys (%v): the test needs them spread", node, onNode, err)
	}

	t.Run("inspect --pattern", func(t *testing.T) {
		p, code := runLockctl(t, plain, "inspect", "--pattern", "lock:*plain*", "-o", "json")
		var rep inspect.Report
		if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil || code != 0 {
			t.Fatalf("exit %d, %v, stderr %s", code, err, p.stderr.String())
		}
		if rep.Summary.Locks != 301 {
			t.Errorf("listed %d locks, want 301 (the node in the URL holds %d keys)", rep.Summary.Locks, onNode)
		}
		if got := strings.TrimSpace(p.stderr.String()); got != "lockctl: "+note {
			t.Errorf("stderr %q, want the one note %q", got, note)
		}
		p, code = runLockctl(t, plain, "inspect", "--pattern", "lock:*plain*", "--fail-on", "error", "-o", "jsonl")
		if code != 1 || !strings.Contains(p.stdout.String(), `"NO_TTL"`) {
			t.Errorf("--fail-on error with a NO_TTL lock on another primary: exit %d, want 1; stderr %s", code, p.stderr.String())
		}
	})

	t.Run("inspect KEY", func(t *testing.T) {
		p, code := runLockctl(t, plain, "inspect", noTTL, "-o", "json")
		var rep inspect.Report
		if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil || code != 0 || len(rep.Locks) != 1 ||
			!rep.Locks[0].Exists || rep.Locks[0].Owner != "stuck-owner" {
			t.Fatalf("exit %d, %v, %+v, stderr %s", code, err, rep.Locks, p.stderr.String())
		}
	})

	t.Run("watch", func(t *testing.T) {
		p, code := runLockctl(t, plain, "watch", noTTL, "--duration", "300ms", "--interval", "50ms", "-o", "jsonl")
		if code != 0 || !strings.Contains(p.stdout.String(), `"HELD"`) {
			t.Errorf("exit %d, stdout %s, stderr %s", code, p.stdout.String(), p.stderr.String())
		}
	})

	t.Run("run", func(t *testing.T) {
		v := valueOffNode(t, rdb, node, "plain-run")
		out := filepath.Join(t.TempDir(), "child")
		p, code := runLockctl(t, plain, "run", v, "--budget", "30s", "--", "sh", "-c", `echo "$LOCKCTL_KEY" > "$0"`, out)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, p.stderr.String())
		}
		if got, want := readTrim(t, out), ks.Keys(v).Lock; got != want {
			t.Errorf("child's LOCKCTL_KEY %q, want the cluster key %q", got, want)
		}
		// One acquire on a missing counter: it starts from the server's
		// TIME in µs (docs/fencing.md), above any 32-bit value.
		if n, err := rdb.Get(bg, ks.Keys(v).Fence).Int64(); err != nil || n <= math.MaxInt32 {
			t.Errorf("fence counter %d (%v), want a TIME-started counter", n, err)
		}
	})

	t.Run("unlock", func(t *testing.T) {
		v := valueOffNode(t, rdb, node, "plain-unlock")
		l, err := lockcore.NewLocker(rdb).Acquire(bg, ks.Keys(v), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		p, code := runLockctl(t, plain, "unlock", v, "--owner", l.Owner)
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, p.stderr.String())
		}
		if n := rdb.Exists(bg, l.Keys.Lock).Val(); n != 0 {
			t.Errorf("lock %s still there after unlock", l.Keys.Lock)
		}
	})

	t.Run("MOVED without INFO", func(t *testing.T) {
		// A user whose ACL refuses INFO: lockctl cannot tell it is a
		// cluster node before the first MOVED, and refuses then.
		for _, n := range c.Nodes {
			if err := n.Client(t).Do(bg, "ACL", "SETUSER", "noinfo", "on", ">noinfo-pw", "~*", "+@all", "-info").Err(); err != nil {
				t.Fatal(err)
			}
		}
		p, code := runLockctl(t, "redis://noinfo:noinfo-pw@"+node, "inspect", noTTL)
		if code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		oneLine(t, "MOVED", p.stderr.String(), "is a cluster node", "MOVED ", "--cluster", "redis+cluster://"+node)
		if strings.Contains(p.stderr.String(), "noinfo-pw") {
			t.Errorf("stderr shows the password: %s", p.stderr.String())
		}
	})
}

// TestClusterModeRefusals: a server that is not the kind the URL names is
// one line saying what to use instead (docs/cluster.md): a cluster URL on a
// standalone server and a database number on a cluster node are exit 2; a
// cluster node that serves no slots, and a cluster that is down, exit 3.
func TestClusterModeRefusals(t *testing.T) {
	t.Parallel()
	std := redistest.Start(t)
	p, code := runLockctl(t, "redis+cluster://"+std.Addr, "inspect", "order-demo-001")
	if code != 2 {
		t.Errorf("redis+cluster:// on a standalone server: exit %d, want 2", code)
	}
	oneLine(t, "cluster URL on standalone", p.stderr.String(), "is not a cluster node", "redis://"+std.Addr, "without --cluster")

	node := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	p, code = runLockctl(t, "redis://"+node.Addr+"/2", "inspect", "order-demo-001")
	if code != 2 {
		t.Errorf("database 2 on a cluster node: exit %d, want 2", code)
	}
	oneLine(t, "database 2", p.stderr.String(), "only database 0", "redis+cluster://"+node.Addr)

	p, code = runLockctl(t, "redis://"+node.Addr, "inspect", "order-demo-001")
	if code != 3 {
		t.Errorf("a node with no slots: exit %d, want 3", code)
	}
	oneLine(t, "no slots", p.stderr.String(), "serves no hash slots", "--redis")

	// One node serving 101 of the 16384 slots: cluster_state fail.
	if err := node.Client(t).Do(context.Background(), "CLUSTER", "ADDSLOTSRANGE", "0", "100").Err(); err != nil {
		t.Fatal(err)
	}
	p, code = runLockctl(t, "redis://"+node.Addr, "inspect", "order-demo-001")
	if code != 3 {
		t.Errorf("a cluster that is down: exit %d, want 3", code)
	}
	errOut := strings.TrimPrefix(p.stderr.String(), "lockctl: "+node.Addr+" is a cluster node: using the cluster (redis+cluster:// says so up front)\n")
	oneLine(t, "CLUSTERDOWN", errOut, "the cluster is down", "CLUSTERDOWN", "cluster info")
	// Every sample of watch fails (retried for up to --timeout): the end
	// of --duration is no success.
	p, code = runLockctl(t, "redis://"+node.Addr, "watch", "order-demo-001", "--duration", "300ms", "--timeout", "10s")
	if code != 3 || !strings.Contains(p.stderr.String(), "the cluster is down") {
		t.Errorf("watch with no good sample: exit %d, want 3; stderr %s", code, p.stderr.String())
	}
}
