package trial

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func script(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "testdata", "trial", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func codes(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Code)
	}
	return out
}

// TestUnfencedWorkerIsUnsafeUnderPause: a shell worker that writes without
// checking its fence has a stale write within a few seconds of pauses, and
// FailFast ends the run there.
func TestUnfencedWorkerIsUnsafeUnderPause(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Options{Command: []string{script(t, "unfenced.sh")}, Duration: 20 * time.Second, FailFast: true,
		FaultDuration: 1800 * time.Millisecond, Nemeses: []string{FaultPause}, Seed: 1, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != history.VerdictUnsafe || !slices.Contains(codes(res.Violations), history.CodeStaleWrite) {
		t.Fatalf("verdict %s, violations %v; want unsafe with %s\nfaults %+v", res.Verdict, res.Violations, history.CodeStaleWrite, res.Faults)
	}
	if res.DurationMS >= 20000 || !slices.Contains(res.Notes, "ended at the first violation (fail fast)") {
		t.Errorf("ran %dms with notes %q: want FailFast to end it at the stale write", res.DurationMS, res.Notes)
	}
	if len(res.Faults) == 0 || res.Faults[0].Kind != FaultPause || res.Faults[0].Worker == 0 {
		t.Errorf("faults %+v, want a pause of a worker first", res.Faults)
	}
	if res.Faults[0].Key != "lock:counter" {
		t.Errorf("first pause %+v: want the holder of lock:counter targeted", res.Faults[0])
	}
	stale := res.Violations[0]
	unheld := false
	for _, sg := range res.Lanes[stale.Worker-1].Segments {
		unheld = unheld || sg.State == history.LaneWorking && !sg.Holds && sg.FromMS <= stale.AtMS+50 && sg.FromMS >= stale.AtMS-50
	}
	if !unheld {
		t.Errorf("the stale write at %dms is not drawn as work without the lock in w%d's lane: %+v", stale.AtMS, stale.Worker, res.Lanes[stale.Worker-1])
	}
	held := false
	for _, e := range res.Events {
		held = held || e.Worker > 0 && e.Key == "lock:counter"
	}
	if !held {
		t.Errorf("no timeline event names the worker holding lock:counter: %+v", res.Events)
	}
}

// TestFencedWorkerIsSafeUnderPauseAndKill: the same worker with a fenced
// write survives pauses, kills, partitions and early expiry.
func TestFencedWorkerIsSafeUnderFaults(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Options{Command: []string{script(t, "fenced.sh")}, Duration: 5 * time.Second,
		FaultDuration: 1500 * time.Millisecond, Seed: 2, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != history.VerdictSafe || res.Ops == 0 {
		t.Fatalf("verdict %s, %d ops, violations %+v; want safe with ops", res.Verdict, res.Ops, res.Violations)
	}
	if len(res.Faults) == 0 {
		t.Error("no fault injected")
	}
}

// TestGivenRedisAndKillRestarts: with a given server, killed workers are
// started again, and restart is refused.
func TestGivenRedisAndKillRestarts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	o := Options{Command: []string{script(t, "fenced.sh")}, Duration: 3 * time.Second, Workers: 2, FaultDuration: 400 * time.Millisecond,
		Nemeses: []string{FaultKill}, Seed: 3, Grace: time.Second, Env: os.Environ(), Redis: c, Upstream: srv.Addr}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, r := range res.Reports {
		starts += r.Starts
	}
	if starts <= 2 || len(res.Faults) < 2 {
		t.Errorf("%d starts after %d faults: want killed workers started again", starts, len(res.Faults))
	}
	o.Nemeses = []string{FaultRestart}
	if _, err := Run(context.Background(), o); !errors.Is(err, ErrRestartNeedsScratch) {
		t.Errorf("restart on a given server: err %v, want ErrRestartNeedsScratch", err)
	}
}

func TestCommandNotFound(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Options{Command: []string{"/nonexistent/worker"}})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want *StartError", err)
	}
}

// TestInterruptStopsEverything: a cancelled trial continues its paused
// worker, stops the rest and returns a partial result.
func TestInterruptStopsEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Options{Command: []string{script(t, "unfenced.sh")}, Duration: time.Minute, Workers: 2,
		FaultDuration: 10 * time.Second, Nemeses: []string{FaultPause}, Seed: 1, Grace: time.Second, Env: os.Environ()})
	if !errors.Is(err, context.DeadlineExceeded) || !res.Interrupted {
		t.Fatalf("err %v, interrupted %v: want the context's error and a partial result", err, res.Interrupted)
	}
	// Before the 10s pause would have ended by itself: the cancel ended it.
	if d := time.Since(start); d >= 10*time.Second {
		t.Errorf("took %s to stop, as long as the pause", d)
	}
}

// TestPartitionAndRestart: a partition shows in the worker's lane; the
// scratch server restarts empty and the workers carry on; only the
// restart can make the fenced worker unsafe.
func TestPartitionAndRestart(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Options{Command: []string{script(t, "fenced.sh")}, Duration: 4 * time.Second, Workers: 2,
		FaultDuration: time.Second, Nemeses: []string{FaultPartition, FaultRestart}, Seed: 5, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range res.Faults {
		kinds[f.Kind] = true
		if f.Kind == FaultPartition {
			cut := false
			for _, s := range res.Lanes[f.Worker-1].Segments {
				cut = cut || s.State == history.LanePartitioned
			}
			if !cut {
				t.Errorf("worker %d was partitioned at %dms but its lane shows no cut: %+v", f.Worker, f.AtMS, res.Lanes[f.Worker-1])
			}
		}
		if f.Kind == FaultRestart && f.Note != "redis-server restarted empty" {
			t.Errorf("restart: %s", f.Note)
		}
	}
	if !kinds[FaultPartition] || !kinds[FaultRestart] {
		t.Errorf("faults %+v: want a partition and a restart (seed 5)", res.Faults)
	}
	// The fence counter has no persistence either: after the empty restart
	// fences start again at 1, and a write with a low fence is accepted
	// (docs/fencing.md). Before the restart the worker is safe.
	restartMS := int64(-1)
	for _, f := range res.Faults {
		if f.Kind == FaultRestart && restartMS < 0 {
			restartMS = f.AtMS
		}
	}
	for _, v := range res.Violations {
		if v.AtMS < restartMS {
			t.Errorf("violation before the restart at %dms: %+v", restartMS, v)
		}
	}
}

// TestHelpersDoNotOutliveTheirWorker: a helper a worker left running in its
// process group is killed when the worker exits, before the next start.
func TestHelpersDoNotOutliveTheirWorker(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pids := filepath.Join(t.TempDir(), "pids")
	res, err := Run(context.Background(), Options{Command: []string{"sh", "-c", `sleep 300 & echo $! >> "$0"; sleep 0.2`, pids},
		Duration: 1500 * time.Millisecond, Workers: 1, Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	helpers := strings.Fields(string(b))
	if len(helpers) < 2 || res.Reports[0].Starts < 2 {
		t.Fatalf("%d helpers, %d starts: want the worker started again", len(helpers), res.Reports[0].Starts)
	}
	for _, pid := range helpers {
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("helper %s still runs: %s", pid, st)
		}
	}
}

// TestInterruptWhileJudging: Ctrl-C during a slow --store judge ends it at
// once with the client history's partial verdict, not after the judge's
// minute.
func TestInterruptWhileJudging(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	judging := make(chan struct{})
	judge := func(jctx context.Context) ([]Violation, error) {
		close(judging)
		select {
		case <-jctx.Done():
			return nil, jctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("the judge was not cancelled")
		}
	}
	go func() { <-judging; cancel() }()
	start := time.Now()
	res, err := Run(ctx, Options{Command: []string{"sleep", "0.1"}, Duration: 500 * time.Millisecond, Workers: 1,
		Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ(), Judge: judge})
	// The worker printed nothing: its partial verdict has nothing to judge.
	if !errors.Is(err, context.Canceled) || !res.Interrupted || res.Verdict != history.VerdictInconclusive {
		t.Fatalf("err %v, interrupted %v, verdict %q: want the context's error and a partial verdict", err, res.Interrupted, res.Verdict)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "interrupted while judging the database") }) {
		t.Errorf("notes %q", res.Notes)
	}
	// Before the judge's own 10s: the cancel ended it.
	if d := time.Since(start); d >= 10*time.Second {
		t.Errorf("took %s to stop, as long as the judge", d)
	}
}

// TestGivenRedisWithPassword: the proxies authenticate to a server with a
// password, so workers whose REDIS_URL has none still reach it.
func TestGivenRedisWithPassword(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "trial-upstream-pw")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "trial-upstream-pw"})
	defer c.Close()
	o := Options{Command: []string{"sh", "-c", `redis-cli -u "$REDIS_URL" INCR hits; sleep 0.2`}, Duration: time.Second, Workers: 2,
		Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ(), Redis: c, Upstream: srv.Addr,
		UpstreamAuth: []string{"AUTH", "trial-upstream-pw"}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(context.Background(), "hits").Int(); err != nil || n < 2 {
		t.Errorf("hits %d, %v: want the workers' INCRs through the proxies", n, err)
	}
}

// TestNothingSeenIsInconclusive: a worker whose #! names no interpreter
// never starts, and one that cannot reach Redis reports nothing: neither
// run is evidence, so neither is safe (both were, with 0 starts and 0 ops).
func TestNothingSeenIsInconclusive(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "badshebang.sh")
	if err := os.WriteFile(bad, []byte("#!/nonexistent/interpreter\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		command []string
		note    string
	}{
		{"bad shebang", []string{bad}, "inconclusive: no worker started (start: "},
		{"no redis", []string{"sh", "-c", "redis-cli -u redis://127.0.0.1:1/0 SET lock:x 1 NX PX 1000; sleep 0.1"}, "inconclusive: no client operation and no lock event"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), Options{Command: c.command, Duration: 600 * time.Millisecond, Workers: 2,
				Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != history.VerdictInconclusive || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, c.note) }) {
				t.Errorf("verdict %q, notes %q: want inconclusive and %q", res.Verdict, res.Notes, c.note)
			}
		})
	}
}

// TestBlindTimelineIsPartial: when Redis refuses SCAN (an ACL here, as
// rename-command would), the lock timeline cannot be sampled: the result
// says so and is partial, instead of an empty timeline that looks quiet.
func TestBlindTimelineIsPartial(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "noscan", "on", ">noscan-pw", "~*", "+@all", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "noscan", Password: "noscan-pw"})
	defer c.Close()
	o := Options{Command: []string{"sh", "-c", `redis-cli -u "$REDIS_URL" SET lock:x w PX 5000 >/dev/null; sleep 0.3`}, Duration: time.Second, Workers: 1,
		Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ(), Redis: c, Upstream: srv.Addr,
		UpstreamAuth: []string{"AUTH", "noscan", "noscan-pw"}}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.HasPrefix(n, "partial: Redis refused") && strings.Contains(n, "scan")
	}) {
		t.Errorf("partial %v, notes %q: want partial and a note naming the refused SCAN", res.Partial, res.Notes)
	}
	if n, _ := admin.Exists(context.Background(), "lock:x").Result(); n != 1 {
		t.Errorf("the worker's lock:x was not written (%d): the test shows nothing", n)
	}
}
