package cmd_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

// redlockNodes starts n redis-servers at once and returns them with the
// redis+redlock:// URL naming them all.
func redlockNodes(t *testing.T, n int) ([]*redistest.Server, string) {
	t.Helper()
	nodes := make([]*redistest.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = redistest.Launch()
		}()
	}
	wg.Wait()
	addrs := make([]string, n)
	for i, s := range nodes {
		if s != nil {
			t.Cleanup(s.Stop)
			addrs[i] = s.Addr
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return nodes, "redis+redlock://" + strings.Join(addrs, ",") + "/0"
}

// redlockToken is a value as redsync's genValue makes it: 16 random bytes,
// base64.
func redlockToken(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// acquireOn writes what redsync and node-redlock write on each node they
// take: SET key value NX PX lease.
func acquireOn(t *testing.T, nodes []*redistest.Server, idx []int, key, value string, lease time.Duration) {
	t.Helper()
	for _, i := range idx {
		ok, err := nodes[i].Client(t).SetNX(bg, key, value, lease).Result()
		if err != nil || !ok {
			t.Fatalf("SET %s NX PX on node %d: %v %v", key, i, ok, err)
		}
	}
}

// quorumOf runs inspect over the nodes and returns the one lock's report.
func quorumOf(t *testing.T, url string, key string, wantCode int) inspect.QuorumLock {
	t.Helper()
	p, code := runLockctl(t, url, "inspect", "--key", key, "-o", "json")
	if code != wantCode {
		t.Fatalf("inspect %s: exit %d, want %d; stderr %s", key, code, wantCode, p.stderr.String())
	}
	var rep inspect.QuorumReport
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil || len(rep.Locks) != 1 {
		t.Fatalf("inspect %s: %v\n%s", key, err, p.stdout.String())
	}
	return rep.Locks[0]
}

func codes(l inspect.QuorumLock) []string {
	var out []string
	for _, f := range l.Findings {
		out = append(out, f.Code)
	}
	return out
}

func wantCodes(t *testing.T, l inspect.QuorumLock, want, not []string) {
	t.Helper()
	got := codes(l)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: findings %v lack %s", l.Key, got, w)
		}
	}
	for _, w := range not {
		if slices.Contains(got, w) {
			t.Errorf("%s: findings %v have %s", l.Key, got, w)
		}
	}
}

// TestRedlockInspect writes quorum, split, minority and skewed locks on 5
// real servers as redsync does, inspects them (keys and --pattern), checks
// no write command reached a node, then stops nodes one by one.
func TestRedlockInspect(t *testing.T) {
	t.Parallel()
	nodes, url := redlockNodes(t, 5)
	a, b := redlockToken(t), redlockToken(t)
	acquireOn(t, nodes, []int{0, 1, 2}, "rl:quorum", a, 60*time.Second)
	acquireOn(t, nodes, []int{0, 1}, "rl:split", a, 60*time.Second)
	acquireOn(t, nodes, []int{2, 3}, "rl:split", b, 60*time.Second)
	acquireOn(t, nodes, []int{0, 1}, "rl:minority", a, 60*time.Second)
	acquireOn(t, nodes, []int{0, 1, 2}, "rl:skew", a, 60*time.Second)
	acquireOn(t, nodes, []int{3}, "rl:skew", a, 30*time.Second) // a clock that jumped on node 3
	acquireOn(t, nodes, []int{4}, "rl:only4", b, 60*time.Second)
	// node-redlock's value: randomBytes(16).toString("hex").
	nr := make([]byte, 16)
	if _, err := rand.Read(nr); err != nil {
		t.Fatal(err)
	}
	acquireOn(t, nodes, []int{1, 2, 3, 4}, "rl:node-redlock", hex.EncodeToString(nr), 50*time.Second)
	// redsync itself, over the five nodes: its mutex takes all five.
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = goredis.NewPool(n.Client(t))
	}
	mu := redsync.New(pools...).NewMutex("rl:redsync", redsync.WithExpiry(50*time.Second))
	if err := mu.Lock(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := n.Client(t).ConfigResetStat(bg).Err(); err != nil {
			t.Fatal(err)
		}
	}

	q := quorumOf(t, url, "rl:quorum", 0)
	if q.Quorum.Owner == nil || *q.Quorum.Owner != a || q.Quorum.Held != 3 || q.Quorum.Nodes != 5 || q.Quorum.State != inspect.QuorumHeld {
		t.Errorf("quorum: %+v", q.Quorum)
	}
	// Validity: the 3rd largest of three PTTLs under 60s minus 1% of the
	// lease, taken as the largest PTTL read (under 60s: long leases keep
	// the keys through a slow run), + 2ms.
	if v := q.Quorum.ValidityMS; v == nil || *v > 60000-601 || *v < 30000 || q.Quorum.DriftMS < 302 || q.Quorum.DriftMS > 602 {
		t.Errorf("validity %v drift %d", v, q.Quorum.DriftMS)
	}
	// --lease gives the drift its lease: 1% of 30s + 2ms.
	p, code := runLockctl(t, url, "inspect", "--key", "rl:quorum", "--lease", "30s", "-o", "json")
	var leased inspect.QuorumReport
	if err := json.Unmarshal(p.stdout.Bytes(), &leased); code != 0 || err != nil || leased.Locks[0].Quorum.DriftMS != 302 || leased.Locks[0].Quorum.LeaseMS != 30000 {
		t.Errorf("--lease 30s: exit %d %v\n%s", code, err, p.stdout.String())
	}
	if len(q.Nodes) != 5 || !q.Nodes[0].Exists || q.Nodes[0].Owner != a || q.Nodes[3].Exists || q.Nodes[3].PTTLMS != -2 {
		t.Errorf("nodes: %+v", q.Nodes)
	}
	wantCodes(t, q, nil, []string{"NO_QUORUM", "SPLIT_OWNERS", "MINORITY_HOLDER", "TTL_SKEW", "NODE_UNREACHABLE"})

	r := quorumOf(t, url, "rl:redsync", 0)
	// redsync's token under the caller's key names no library (issue 27): a generic base64 token.
	if r.Quorum.Owner == nil || *r.Quorum.Owner != mu.Value() || r.Quorum.Held != 5 || r.Layout.Name != "unknown" || r.Layout.Shape != "base64-token" || r.Quorum.DriftMS > 502 {
		t.Errorf("redsync's lock: %+v, layout %s", r.Quorum, r.Layout.Name)
	}

	nl := quorumOf(t, url, "rl:node-redlock", 0)
	// 32 random hex names no library (issue 27): a generic hex token.
	if nl.Quorum.Held != 4 || nl.Layout.Name != "unknown" || nl.Layout.Shape != "hex-token" || nl.Quorum.DriftMS > 502 || nl.Quorum.ValidityMS == nil || *nl.Quorum.ValidityMS > 50000-500 {
		t.Errorf("node-redlock's lock: %+v, layout %s", nl.Quorum, nl.Layout.Name)
	}

	s := quorumOf(t, url, "rl:split", 0)
	if s.Quorum.Owner != nil || s.Quorum.State != inspect.QuorumSplit || s.Quorum.Held != 2 || s.Quorum.ValidityMS != nil {
		t.Errorf("split: %+v", s.Quorum)
	}
	wantCodes(t, s, []string{"NO_QUORUM", "SPLIT_OWNERS"}, []string{"MINORITY_HOLDER"})

	m := quorumOf(t, url, "rl:minority", 0)
	if m.Quorum.Owner != nil || m.Quorum.State != inspect.QuorumNoQuorum || m.Quorum.Held != 2 {
		t.Errorf("minority: %+v", m.Quorum)
	}
	wantCodes(t, m, []string{"NO_QUORUM", "MINORITY_HOLDER"}, []string{"SPLIT_OWNERS"})

	k := quorumOf(t, url, "rl:skew", 0)
	if k.Quorum.Held != 4 || k.Quorum.State != inspect.QuorumHeld {
		t.Errorf("skew: %+v", k.Quorum)
	}
	wantCodes(t, k, []string{"TTL_SKEW"}, []string{"NO_QUORUM"})

	// The URL from the config file's redis.url, as for any other URL.
	cfg := filepath.Join(t.TempDir(), "lockctl.yaml")
	if err := os.WriteFile(cfg, []byte("redis:\n  url: "+url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := lockctlEnv(t, nil, "inspect", "--config", cfg, "--key", "rl:quorum", "-o", "yaml"); code != 0 || !strings.Contains(out, "state: held") {
		t.Errorf("redis.url in the config file: exit %d\n%s%s", code, out, errOut)
	}

	// --fail-on error: exit 1 for the split, whose NO_QUORUM is an error.
	if p, code := runLockctl(t, url, "inspect", "--key", "rl:split", "--fail-on", "error"); code != 1 {
		t.Errorf("--fail-on error on a split: exit %d; %s", code, p.stderr.String())
	}
	// --owner: the owner of a minority does not hold the lock.
	if p, code := runLockctl(t, url, "inspect", "--key", "rl:minority", "--owner", a); code != 1 {
		t.Errorf("--owner on a minority: exit %d; %s", code, p.stdout.String())
	}
	if p, code := runLockctl(t, url, "inspect", "--key", "rl:quorum", "--owner", a); code != 0 {
		t.Errorf("--owner on the quorum: exit %d; %s", code, p.stdout.String())
	}

	p, code = runLockctl(t, url, "inspect", "--pattern", "rl:*", "-o", "json")
	if code != 0 {
		t.Fatalf("--pattern: exit %d; %s", code, p.stderr.String())
	}
	var rep inspect.QuorumReport
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range rep.Locks {
		keys = append(keys, l.Key)
	}
	if want := []string{"rl:minority", "rl:node-redlock", "rl:only4", "rl:quorum", "rl:redsync", "rl:skew", "rl:split"}; !slices.Equal(keys, want) {
		t.Errorf("--pattern merged %v, want %v", keys, want)
	}

	// -o jsonl: one line per key (with its quorum), then the summary.
	p, code = runLockctl(t, url, "inspect", "--pattern", "rl:*", "-o", "jsonl")
	if lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n"); code != 0 || len(lines) != 8 ||
		!strings.Contains(lines[0], `"quorum":`) || !strings.HasPrefix(lines[7], `{"summary":`) {
		t.Errorf("jsonl: exit %d\n%s", code, p.stdout.String())
	}

	p, code = runLockctl(t, url, "inspect", "--key", "rl:split")
	if out := p.stdout.String(); code != 0 || !strings.Contains(out, "  "+nodes[2].Addr+"  ") || !strings.Contains(out, "split") {
		t.Errorf("table: exit %d\n%s", code, out)
	}

	// Read-only: no node saw a command that writes.
	for i, n := range nodes {
		stats := n.Client(t).Info(bg, "commandstats").Val()
		for _, w := range []string{"cmdstat_set:", "cmdstat_del:", "cmdstat_pexpire:", "cmdstat_eval", "cmdstat_incr"} {
			if strings.Contains(stats, w) {
				t.Errorf("node %d saw %s", i, w)
			}
		}
	}

	// One node down: the quorum is counted on the four that answer.
	nodes[4].Stop()
	q = quorumOf(t, url, "rl:quorum", 0)
	if q.Quorum.Held != 3 || q.Quorum.Answered != 4 || q.Quorum.State != inspect.QuorumHeld || q.Nodes[4].Error == "" {
		t.Errorf("one node down: %+v %+v", q.Quorum, q.Nodes[4])
	}
	wantCodes(t, q, []string{"NODE_UNREACHABLE"}, []string{"NO_QUORUM"})
	p, _ = runLockctl(t, url, "inspect", "--key", "rl:quorum")
	if out := p.stdout.String(); !strings.Contains(out, "3/5 (4 up)") || !strings.Contains(out, "down") {
		t.Errorf("table with a node down:\n%s", out)
	}
	// --pattern with a node down scans the others (rl:only4 went with its node).
	p, code = runLockctl(t, url, "inspect", "--pattern", "rl:*", "-o", "json")
	rep = inspect.QuorumReport{}
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); code != 0 || err != nil || len(rep.Locks) != 6 || rep.Locks[0].Quorum.Answered != 4 {
		t.Errorf("--pattern with a node down: exit %d %v\n%s%s", code, err, p.stdout.String(), p.stderr.String())
	}
	// A second node, a holder, goes: 2 of 5 is no quorum (go-redsync/redsync#186).
	nodes[0].Stop()
	q = quorumOf(t, url, "rl:quorum", 0)
	if q.Quorum.Owner != nil || q.Quorum.Held != 2 || q.Quorum.Answered != 3 {
		t.Errorf("two nodes down: %+v", q.Quorum)
	}
	wantCodes(t, q, []string{"NO_QUORUM", "MINORITY_HOLDER", "NODE_UNREACHABLE"}, nil)
}

// TestRedlockWatch follows one key over 5 real servers through a quorum
// acquired, lost, taken by another owner with a split, and a node stopped.
func TestRedlockWatch(t *testing.T) {
	t.Parallel()
	nodes, url := redlockNodes(t, 5)
	w := startWatch(t, []string{"LOCKCTL_REDIS_URL=" + url}, "watch", "--key", "rl:w", "--interval", "20ms", "--timeout", "1s", "-o", "jsonl")
	w.waitFor(t, inspect.EventQuorumFree, 10*time.Second)
	a, b := redlockToken(t), redlockToken(t)
	acquireOn(t, nodes, []int{0, 1, 2}, "rl:w", a, 30*time.Second)
	if e := w.waitFor(t, inspect.EventQuorumAcquired, 10*time.Second); e.Owner != a {
		t.Errorf("QUORUM_ACQUIRED by %q, want %q", e.Owner, a)
	}
	for _, i := range []int{0, 1} {
		nodes[i].Client(t).Del(bg, "rl:w")
	}
	w.waitFor(t, inspect.EventQuorumLost, 10*time.Second)
	acquireOn(t, nodes, []int{0, 1, 3}, "rl:w", b, 30*time.Second)
	// b's majority, seen before a node goes: SPLIT came with the first of
	// b's keys sampled (a is still on node 2), at the latest with the majority.
	for e := w.waitFor(t, inspect.EventQuorumAcquired, 10*time.Second); e.Owner != b; e = w.waitFor(t, inspect.EventQuorumAcquired, 10*time.Second) {
	}
	if !slices.ContainsFunc(w.seen, func(e inspect.Event) bool { return e.Event == inspect.EventSplit }) {
		w.waitFor(t, inspect.EventSplit, 10*time.Second)
	}
	nodes[3].Stop()
	w.waitFor(t, inspect.EventNodeDown, 10*time.Second)
	w.waitFor(t, inspect.EventQuorumLost, 10*time.Second)
	if code := w.stop(t); code != 130 {
		t.Errorf("watch after Ctrl-C: exit %d; stderr %s", code, w.stderr())
	}
	var acquired []string
	for _, e := range w.seen {
		if e.Event == inspect.EventAcquired || e.Event == inspect.EventTakeover { // a DEL then SET between two samples
			acquired = append(acquired, e.Owner)
		}
	}
	if len(acquired) != 6 { // a on 0, 1, 2, then b on 0, 1, 3: each node's own event
		t.Errorf("per-node ACQUIRED or TAKEOVER events %d, want 6: %+v", len(acquired), w.seen)
	}
}

// TestRedlockWatchPattern: watch --pattern over five nodes follows the
// keys the glob matches on any node, one quorum view each: a key on a
// majority is QUORUM_ACQUIRED, one on a minority only its nodes' events,
// and deleting it from the majority is QUORUM_LOST; other keys stay silent.
func TestRedlockWatchPattern(t *testing.T) {
	t.Parallel()
	nodes, url := redlockNodes(t, 5)
	a, b, c := redlockToken(t), redlockToken(t), redlockToken(t)
	acquireOn(t, nodes, []int{0, 1}, "rlp:minority", c, 30*time.Second)
	acquireOn(t, nodes, []int{0, 1, 2}, "other:x", c, 30*time.Second)
	w := startWatch(t, []string{"LOCKCTL_REDIS_URL=" + url}, "watch", "--pattern", "rlp:*", "--interval", "50ms", "--timeout", "1s", "-o", "jsonl")
	if e := w.waitFor(t, inspect.EventQuorumFree, 10*time.Second); e.Key != "rlp:minority" { // the first pass
		t.Errorf("QUORUM_FREE of %s, want rlp:minority", e.Key)
	}
	acquireOn(t, nodes, []int{2, 3, 4}, "rlp:a", a, 30*time.Second)
	if e := w.waitFor(t, inspect.EventQuorumAcquired, 10*time.Second); e.Key != "rlp:a" || e.Owner != a {
		t.Errorf("QUORUM_ACQUIRED %s by %q, want rlp:a by %q", e.Key, e.Owner, a)
	}
	acquireOn(t, nodes, []int{0, 2, 4}, "rlp:b", b, 30*time.Second)
	if e := w.waitFor(t, inspect.EventQuorumAcquired, 10*time.Second); e.Key != "rlp:b" || e.Owner != b {
		t.Errorf("QUORUM_ACQUIRED %s by %q, want rlp:b by %q", e.Key, e.Owner, b)
	}
	for _, i := range []int{2, 3} {
		nodes[i].Client(t).Del(bg, "rlp:a")
	}
	if e := w.waitFor(t, inspect.EventQuorumLost, 10*time.Second); e.Key != "rlp:a" || e.PreviousOwner != a {
		t.Errorf("QUORUM_LOST %s from %q, want rlp:a from %q", e.Key, e.PreviousOwner, a)
	}
	if code := w.stop(t); code != 130 {
		t.Errorf("watch after Ctrl-C: exit %d; stderr %s", code, w.stderr())
	}
	for _, e := range w.seen {
		if e.Key == "other:x" || e.Key == "rlp:minority" && strings.HasPrefix(e.Event, "QUORUM_") && e.Event != inspect.EventQuorumFree {
			t.Errorf("event %s on %s: %+v", e.Event, e.Key, e)
		}
	}
}

// TestRedlockBadURL: a redis+redlock:// URL with fewer than 3 nodes, too
// many, a duplicate or a host without a port is one line and exit 2, with
// no password in it; an even count is accepted with a note.
func TestRedlockBadURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, want string }{
		{"redis+redlock://u:s3cr%2Fet@127.0.0.1:1,127.0.0.1:2/0", "names 2 nodes; Redlock needs 3 to 9"},
		{"redis+redlock://u:s3cr%2Fet@127.0.0.1:1,127.0.0.1:2,127.0.0.1:1/0", "node 127.0.0.1:1 is named twice (nodes 1 and 3)"},
		{"redis+redlock://h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9,h:10", "names 10 nodes"},
		{"redis+redlock://u:s3cr%2Fet@127.0.0.1:1,127.0.0.1,127.0.0.1:3/0", `node 2 "127.0.0.1" is not host:port`},
	} {
		p, code := runLockctl(t, c.url, "inspect", "--key", "k")
		out := p.stdout.String() + p.stderr.String()
		first, _, _ := strings.Cut(out, "\n") // then the usage hint every exit-2 error gets
		if code != 2 || !strings.Contains(first, c.want) || strings.Contains(out, "s3cr") {
			t.Errorf("%s: exit %d, want 2 and one line with %q:\n%s", c.url, code, c.want, out)
		}
	}
	url := "redis+redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3/0"
	if p, code := runLockctl(t, url, "inspect", "--key", "k", "--cluster"); code != 2 || !strings.Contains(p.stderr.String(), "cannot be combined") {
		t.Errorf("--cluster: exit %d; %s", code, p.stderr.String())
	}
	if p, code := runLockctl(t, url, "unlock", "k", "--owner", "x"); code != 2 || !strings.Contains(p.stderr.String(), "only inspect and watch") {
		t.Errorf("unlock: exit %d; %s", code, p.stderr.String())
	}
	// config view takes a good Redlock URL as inspect would: no error on redis.url.
	if p, code := runLockctl(t, url, "config", "view"); code != 0 || strings.Contains(p.stdout.String()+p.stderr.String(), "only inspect and watch") {
		t.Errorf("config view: exit %d\n%s%s", code, p.stdout.String(), p.stderr.String())
	}
	p, code := runLockctl(t, "redis+redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4/0", "inspect", "--key", "k", "--timeout", "1s")
	if code != 3 || !strings.Contains(p.stderr.String(), "note: 4 Redlock nodes need 3 for a majority") || !strings.Contains(p.stderr.String(), "no node answered") {
		t.Errorf("4 nodes, none up: exit %d; %s", code, p.stderr.String())
	}
}

// lockctlEnv runs `lockctl args...` with env added to a clean HOME and
// returns its exit code, stdout and stderr.
func lockctlEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	home := t.TempDir()
	c := exec.Command("lockctl", args...)
	c.Env = append(os.Environ(), append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "NO_COLOR=1"}, env...)...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestRedlockTLSAndPassword: rediss+redlock:// reaches 3 TLS servers that
// require a password, each verified against its own CA (one PEM file holding
// the three), with the password from the environment or the URL, never shown.
func TestRedlockTLSAndPassword(t *testing.T) {
	t.Parallel()
	const pw = "Redl0ck-pw"
	var addrs []string
	var cas []byte
	for range 3 {
		s := redistest.StartTLS(t, "--tls-auth-clients", "no", "--requirepass", pw)
		addrs = append(addrs, s.Addr)
		b, err := os.ReadFile(s.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cas = append(cas, b...)
	}
	caFile := filepath.Join(t.TempDir(), "cas.pem")
	if err := os.WriteFile(caFile, cas, 0o600); err != nil {
		t.Fatal(err)
	}
	url := "rediss+redlock://" + strings.Join(addrs, ",") + "/0"
	code, out, errOut := lockctlEnv(t, []string{"LOCKCTL_REDIS_URL=" + url, "LOCKCTL_REDIS_PASSWORD=" + pw}, "inspect", "--key", "k", "--tls-ca", caFile, "-o", "json")
	var rep inspect.QuorumReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Locks) != 1 || rep.Locks[0].Quorum.Answered != 3 || rep.Locks[0].Quorum.State != inspect.QuorumFree {
		t.Fatalf("TLS, password from the environment: exit %d\n%s\n%s", code, out, errOut)
	}
	// In --redis: a warning, and the password nowhere in the output.
	withPW := "rediss+redlock://:" + pw + "@" + strings.Join(addrs, ",") + "/0"
	code, out, errOut = lockctlEnv(t, nil, "inspect", "--redis", withPW, "--key", "k", "--tls-ca", caFile)
	if code != 0 || strings.Contains(out+errOut, pw) || !strings.Contains(errOut, "a password in --redis") {
		t.Errorf("password in --redis: exit %d\n%s\n%s", code, out, errOut)
	}
	// A wrong password: no node answers, exit 3, the password not shown.
	code, out, errOut = lockctlEnv(t, []string{"LOCKCTL_REDIS_URL=" + url, "LOCKCTL_REDIS_PASSWORD=Wr0ng-pw"}, "inspect", "--key", "k", "--tls-ca", caFile)
	if code != 3 || strings.Contains(out+errOut, "Wr0ng-pw") || !strings.Contains(errOut, "WRONGPASS") {
		t.Errorf("wrong password: exit %d\n%s\n%s", code, out, errOut)
	}
	// Without the CAs: the certificates are checked (exit 3).
	code, _, errOut = lockctlEnv(t, []string{"LOCKCTL_REDIS_URL=" + url, "LOCKCTL_REDIS_PASSWORD=" + pw}, "inspect", "--key", "k")
	if code != 3 || !strings.Contains(errOut, "certificate") {
		t.Errorf("no --tls-ca: exit %d; %s", code, errOut)
	}
}
