package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/redis/go-redis/v9"
)

// eventStream is a background `lockctl watch -o jsonl` whose stdout is
// decoded line by line; stderr goes to a file (read after it ends).
type eventStream struct {
	cmd    *exec.Cmd
	events chan inspect.Event
	seen   []inspect.Event
	errLog string
}

// startWatch starts `lockctl args...` with env added to a clean HOME.
func startWatch(t *testing.T, env []string, args ...string) *eventStream {
	t.Helper()
	home := t.TempDir()
	s := &eventStream{cmd: exec.Command("lockctl", args...), events: make(chan inspect.Event, 256),
		errLog: filepath.Join(home, "stderr")}
	s.cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "NO_COLOR=1"}, env...)...)
	errFile, err := os.Create(s.errLog)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	s.cmd.Stderr = errFile
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e inspect.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = inspect.Event{Event: "UNPARSED", Message: sc.Text()}
			}
			s.events <- e
		}
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	return s
}

// waitFor returns the next event named word (events before it are kept in
// seen); it fails the test after limit or when watch ends first.
func (s *eventStream) waitFor(t *testing.T, word string, limit time.Duration) inspect.Event {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("watch ended before %s; events %+v; stderr: %s", word, s.seen, s.stderr())
			}
			s.seen = append(s.seen, e)
			if e.Event == word {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s within %s; events %+v; stderr: %s", word, limit, s.seen, s.stderr())
		}
	}
}

// stop interrupts watch (Ctrl-C) and returns its exit code (130 expected).
func (s *eventStream) stop(t *testing.T) int {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	for e := range s.events {
		s.seen = append(s.seen, e)
	}
	_ = s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

func (s *eventStream) stderr() string {
	b, _ := os.ReadFile(s.errLog)
	return string(b)
}

// valuesOnEveryPrimary returns one business value per primary of the
// cluster: the slot of its lock key (default template) is served there.
func valuesOnEveryPrimary(t *testing.T, rdb *redis.ClusterClient, prefix string, n int) []string {
	t.Helper()
	slots, err := rdb.ClusterSlots(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	ks, err := lockcore.NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	owner := func(slot int) string {
		for _, r := range slots {
			if slot >= int(r.Start) && slot <= int(r.End) {
				return r.Nodes[0].Addr
			}
		}
		return ""
	}
	byNode := map[string]string{}
	for i := 0; len(byNode) < n && i < 1000; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if node := owner(lockcore.Slot(ks.Keys(v).Lock)); byNode[node] == "" {
			byNode[node] = v
		}
	}
	if len(byNode) != n {
		t.Fatalf("values cover %d primaries, want %d (%v)", len(byNode), n, slots)
	}
	var out []string
	for _, v := range byNode {
		out = append(out, v)
	}
	return out
}

// TestCluster runs inspect, watch, run and simulate --redis through the
// binary against a real 3-primary Redis Cluster (redis+cluster:// URL or
// --cluster), and the cluster refusals: a template or a value that puts the
// lock and its fence counter on two slots is exit 2 with both slots named.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	url := c.URL()
	rdb := c.Client(t)
	ks, err := lockcore.NewKeySpec("", "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	lk := lockcore.NewLocker(rdb)

	t.Run("run", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "child")
		// --cluster with a redis:// seed URL is the other spelling.
		seed := "redis://" + c.Nodes[1].Addr
		p, code := runLockctl(t, seed, "run", "order-cluster-run", "--cluster", "--budget", "30s", "--",
			"sh", "-c", `echo "$LOCKCTL_FENCE $LOCKCTL_KEY" > "$0"; lockctl inspect order-cluster-run -o json > "$0.inspect"`, out)
		if code != 0 {
			t.Fatalf("run: exit %d, stderr %s", code, p.stderr.String())
		}
		keys := ks.Keys("order-cluster-run")
		fence, err := rdb.Get(bg, keys.Fence).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readTrim(t, out), fence+" "+keys.Lock; got != want {
			t.Errorf("child saw %q, want %q", got, want)
		}
		// While the child ran, inspect (same cluster, from the environment)
		// saw the lockctl-layout lock with the child's fence.
		var rep inspect.Report
		if err := json.Unmarshal([]byte(readTrim(t, out+".inspect")), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Locks) != 1 || !rep.Locks[0].Exists || rep.Locks[0].Fence == nil || rep.Locks[0].Fence.Value == nil ||
			fmt.Sprint(*rep.Locks[0].Fence.Value) != fence || rep.Locks[0].Layout.Name != "lockctl" {
			t.Errorf("inspect during run: %+v", rep.Locks)
		}
		if n := rdb.Exists(bg, keys.Lock).Val(); n != 0 {
			t.Errorf("lock %s still exists after run: released?", keys.Lock)
		}
	})

	t.Run("inspect", func(t *testing.T) {
		values := valuesOnEveryPrimary(t, rdb, "order-cluster-inspect", len(c.Nodes))
		held := map[string]*lockcore.Lock{}
		for _, v := range values {
			l, err := lk.Acquire(bg, ks.Keys(v), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Release(bg) })
			held[l.Keys.Lock] = l
		}
		p, code := runLockctl(t, url, "inspect", values[0], "-o", "json")
		var rep inspect.Report
		if err := json.Unmarshal(p.stdout.Bytes(), &rep); code != 0 || err != nil || len(rep.Locks) != 1 {
			t.Fatalf("inspect %s: exit %d, %v, stderr %s\n%s", values[0], code, err, p.stderr.String(), p.stdout.String())
		}
		l, want := rep.Locks[0], held[ks.Keys(values[0]).Lock]
		if l.Owner != want.Owner || l.Fence == nil || l.Fence.Value == nil || *l.Fence.Value != want.Fence || l.PTTLMS <= 0 {
			t.Errorf("inspect: %+v, want owner %s fence %d", l, want.Owner, want.Fence)
		}

		p, code = runLockctl(t, url, "inspect", "--pattern", "lock:OrderId:order-cluster-inspect-*", "-o", "json")
		rep = inspect.Report{}
		if err := json.Unmarshal(p.stdout.Bytes(), &rep); code != 0 || err != nil {
			t.Fatalf("inspect --pattern: exit %d, %v, stderr %s", code, err, p.stderr.String())
		}
		found := map[string]bool{}
		for _, l := range rep.Locks {
			found[l.Key] = true
		}
		for k := range held {
			if !found[k] {
				t.Errorf("inspect --pattern missed %s (slot %d); found %v", k, lockcore.Slot(k), found)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		keys := ks.Keys("order-cluster-watch")
		w := startWatch(t, []string{"LOCKCTL_REDIS_URL=" + url}, "watch", "order-cluster-watch", "-o", "jsonl", "--interval", "50ms", "--duration", "1m")
		w.waitFor(t, inspect.EventFree, 10*time.Second)
		l, err := lk.Acquire(bg, keys, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if e := w.waitFor(t, inspect.EventAcquired, 10*time.Second); e.Owner != l.Owner || e.Fence == nil || *e.Fence != l.Fence {
			t.Errorf("ACQUIRED %+v, want owner %s fence %d", e, l.Owner, l.Fence)
		}
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
		w.waitFor(t, inspect.EventReleased, 10*time.Second)
		if code := w.stop(t); code != 130 {
			t.Errorf("watch interrupted: exit %d, stderr %s", code, w.stderr())
		}
	})

	t.Run("simulate", func(t *testing.T) {
		// Time scale 0.05 (not the default 0.01): the live run must keep its
		// timings on a loaded 2-core machine under -race.
		p, code := runLockctl(t, url, "simulate", "stale-writer", "--redis", url, "--time-scale", "0.05", "-o", "json")
		var res struct {
			Model  struct{ Verdict string } `json:"model"`
			Live   struct{ Verdict string } `json:"live"`
			Agrees bool                     `json:"agrees"`
		}
		if err := json.Unmarshal(p.stdout.Bytes(), &res); err != nil || code != 0 {
			t.Fatalf("simulate: exit %d %v, stderr %s\n%s", code, err, p.stderr.String(), p.stdout.String())
		}
		if !res.Agrees || res.Live.Verdict != res.Model.Verdict || res.Live.Verdict == "" {
			t.Errorf("live %q vs model %q (agrees %v)", res.Live.Verdict, res.Model.Verdict, res.Agrees)
		}
		var mu sync.Mutex
		var left []string
		_ = rdb.ForEachMaster(bg, func(ctx context.Context, n *redis.Client) error {
			k, err := n.Keys(ctx, "lockctl:sim:*").Result()
			mu.Lock()
			defer mu.Unlock()
			left = append(left, k...)
			return err
		})
		if len(left) > 0 {
			t.Errorf("simulate left %v", left)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		spec := "../checklist/testdata/specs/lock_key.per-object.pass.yaml"
		for _, tc := range []struct {
			args []string
			want []string
		}{
			// "a}b" with the default templates: lock:OrderId:a}b has no
			// hash tag (slot 7409) and, as it holds a brace, its fence key
			// is lock:OrderId:a}b:fence, hashed whole too (slot 10768).
			{[]string{"inspect", "a}b"}, []string{`value "a}b"`, "slot 7409", "slot 10768"}},
			{[]string{"watch", "a}b", "--duration", "5s"}, []string{`value "a}b"`, "slot 7409", "slot 10768"}},
			{[]string{"run", "a}b", "--budget", "10s", "--grace", "1s", "--", "true"}, []string{`value "a}b"`, "slot 7409", "slot 10768"}},
			{[]string{"unlock", "a}b", "--force", "--yes"}, []string{`value "a}b"`, "slot 7409", "slot 10768"}},
			{[]string{"checklist", "--spec", spec, "--value", "a}b", "--redis", url}, []string{`value "a}b"`, "slot 7409", "slot 10768"}},
			// A fence template without the lock key's slot.
			{[]string{"run", "order-demo-001", "--fence-template", "fence:{value}", "--budget", "10s", "--grace", "1s", "--", "true"},
				[]string{"(slot ", "different cluster slots", "hash tag"}},
			{[]string{"inspect", "order-demo-001", "--fence-template", "fence:{value}"}, []string{"(slot ", "different cluster slots"}},
			{[]string{"simulate", "stale-writer", "--redis", url, "--prefix", "lockctl:sim:plain:"},
				[]string{`prefix "lockctl:sim:plain:"`, "slot ", "hash tag"}},
		} {
			p, code := runLockctl(t, url, tc.args...)
			errOut := p.stderr.String()
			if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
				t.Errorf("%v: exit %d, want 2 with one line; stderr %q", tc.args, code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
				}
			}
		}
		// The whole line, as docs/connecting.md shows it.
		p, _ := runLockctl(t, url, "inspect", "a}b")
		if got, want := strings.SplitN(p.stderr.String(), "\n", 2)[0], `lockctl: value "a}b" cannot be locked in a Redis Cluster: lock and fence keys on different cluster slots: lock key "lock:OrderId:a}b" is on slot 7409, fence key "lock:OrderId:a}b:fence" on slot 10768 (a { or } in it changes the part of the key Redis hashes)`; got != want {
			t.Errorf("inspect a}b:\n got %s\nwant %s", got, want)
		}
		// The same value on a standalone server is fine: it has no slots.
		s := redistest.Start(t)
		if p, code := runLockctl(t, s.URL(), "inspect", "a}b"); code != 0 {
			t.Errorf("inspect a}b standalone: exit %d %s", code, p.stderr.String())
		}
	})

	t.Run("checklist template", func(t *testing.T) {
		// A spec that says nothing of a cluster (lock.cluster false) but
		// whose fence template leaves the lock key's slot fails
		// lock_key.cluster-slot once the live server is a cluster.
		dir := t.TempDir()
		b, err := os.ReadFile("../checklist/testdata/specs/lock_key.cluster-slot.fail.yaml")
		if err != nil {
			t.Fatal(err)
		}
		spec := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(spec, []byte(strings.Replace(string(b), "cluster: true", "cluster: false", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		p, code := runLockctl(t, url, "checklist", "--spec", spec, "--value", "order-demo-001", "--redis", url, "-o", "json")
		if code != 1 || !strings.Contains(p.stdout.String(), "live: the server is a Redis Cluster") ||
			!strings.Contains(p.stdout.String(), fmt.Sprintf("(slot %d)", lockcore.Slot("lock:OrderId:order-demo-001"))) {
			t.Errorf("checklist: exit %d stderr %s\n%s", code, p.stderr.String(), p.stdout.String())
		}
	})
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
