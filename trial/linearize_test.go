package trial

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/history"
)

// rmw is a worker's read-modify-write as its two lines: invoke at call
// (ms), ok at ret, read r and wrote r+1; fence 0 for none. ret < 0 leaves
// the invoke pending (the worker was killed before its ok).
func rmw(w int, call, ret int64, r int, fence int64) []Op {
	inv := Op{Op: OpInvoke, Resource: "counter", Worker: w, AtMS: call, Read: json.RawMessage(fmt.Sprint(r)), Value: json.RawMessage(fmt.Sprint(r + 1))}
	if fence > 0 {
		inv.Fence = ptr(fence)
	}
	if ret < 0 {
		return []Op{inv}
	}
	ok := inv
	ok.Op, ok.AtMS = OpOK, ret
	return []Op{inv, ok}
}

// lines merges operations into the order lockctl received them.
func lines(groups ...[]Op) []Op {
	var ops []Op
	for _, g := range groups {
		ops = append(ops, g...)
	}
	// Stable by arrival: each group's lines keep their order.
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].AtMS < ops[j-1].AtMS; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
	return ops
}

// lostUpdate is the pause story with fences but no seq: w1 reads 1 under
// fence 2 and is paused past its lease; w2 (fence 3) reads 1, writes 2,
// then reads 2 and writes 3 (fence 4); w1 wakes and writes 2 back. w1's
// write overlaps w2's, so the fence judge cannot order them.
func lostUpdate() []Op {
	return lines(
		rmw(3, 0, 300, 0, 1),     // 0 -> 1
		rmw(1, 400, 2600, 1, 2),  // 1 -> 2, paused from 500 to 2500
		rmw(2, 1500, 1800, 1, 3), // 1 -> 2
		rmw(2, 1900, 2200, 2, 4), // 2 -> 3
		rmw(3, 2700, 3000, 2, 5), // reads w1's 2 (w2's 3 is lost) -> 3
		rmw(3, 3100, 3400, 3, 6), // 3 -> 4
		rmw(2, 3500, 3800, 4, 7), // 4 -> 5
	)
}

func TestLostUpdatePassesTheJudgeButNotPorcupine(t *testing.T) {
	t.Parallel()
	ops := lostUpdate()
	if vs := judgeHistory(ops); len(vs) > 0 {
		t.Fatalf("the fence judge found %v: the test needs a history it passes", vs)
	}
	rep := checkLinearizable(ops, 10*time.Second)
	if rep.status != LinearizableViolated || len(rep.violations) != 1 {
		t.Fatalf("status %q, violations %+v; want one %s", rep.status, rep.violations, history.CodeNotLinearizable)
	}
	v := rep.violations[0]
	if v.Code != history.CodeNotLinearizable || v.Resource != "counter" || v.Worker != 1 || v.AtMS != 2600 || v.Source != SourceClient {
		t.Errorf("violation %+v: want NOT_LINEARIZABLE on counter at w1's late ok (2.6s)", v)
	}
	// The smallest failing part: w1's write and w2's two, not the ops before or after.
	want := [][]string{
		{"w1", "400ms", "2.6s", "read 1, wrote 2"},
		{"w2", "1.5s", "1.8s", "read 1, wrote 2"},
		{"w2", "1.9s", "2.2s", "read 2, wrote 3"},
	}
	if fmt.Sprint(v.Rows) != fmt.Sprint(want) {
		t.Errorf("rows %q\nwant %q", v.Rows, want)
	}
	if !strings.Contains(v.Detail, "3 operations of 2 workers") {
		t.Errorf("detail %q", v.Detail)
	}
}

// TestEveryLostUpdateIsShown: two lost updates far apart are two
// violations, each cut to its own three operations.
func TestEveryLostUpdateIsShown(t *testing.T) {
	t.Parallel()
	ops := lostUpdate()
	for _, op := range lostUpdate() {
		op.AtMS += 10000
		op.Read, op.Value = json.RawMessage(fmt.Sprint(atoi(t, op.Read)+5)), json.RawMessage(fmt.Sprint(atoi(t, op.Value)+5))
		ops = append(ops, op)
	}
	rep := checkLinearizable(ops, 10*time.Second)
	if len(rep.violations) != 2 {
		t.Fatalf("%d violations %+v, want 2", len(rep.violations), rep.violations)
	}
	for _, v := range rep.violations {
		if len(v.Rows) != 3 || v.Rows[0][0] != "w1" {
			t.Errorf("violation at %dms: rows %q, want w1's late write and w2's two", v.AtMS, v.Rows)
		}
	}
}

func atoi(t *testing.T, raw json.RawMessage) int {
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLinearizableHistoryPasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ops  []Op
	}{
		{"one at a time", lines(rmw(1, 0, 100, 0, 0), rmw(2, 200, 300, 1, 0), rmw(3, 400, 500, 2, 0))},
		// Overlapping but in some order: w2's read-modify-write fits after w1's.
		{"overlapping in one order", lines(rmw(1, 0, 300, 0, 0), rmw(2, 100, 400, 1, 0))},
		// w1 was killed after its commit, before its ok: w2 read its value.
		{"a pending write that took effect", lines(rmw(1, 0, -1, 0, 0), rmw(2, 500, 600, 1, 0))},
		// w1 was killed before its commit: w2 read the value before it.
		{"a pending write that did not", lines(rmw(1, 0, -1, 0, 0), rmw(2, 500, 600, 0, 0), rmw(2, 700, 800, 1, 0))},
		{"a refused write has no effect", lines(rmw(1, 0, 100, 0, 0), []Op{{Op: OpInvoke, Resource: "counter", Worker: 2, AtMS: 200},
			{Op: OpFail, Resource: "counter", Worker: 2, AtMS: 300, Read: json.RawMessage("1"), Value: json.RawMessage("7")}}, rmw(3, 400, 500, 1, 0))},
		{"resources are registers of their own", lines(rmw(1, 0, 100, 0, 0),
			[]Op{{Op: OpOK, Resource: "other", Worker: 2, AtMS: 150, Read: json.RawMessage("0"), Value: json.RawMessage("1")}}, rmw(2, 200, 300, 1, 0))},
	} {
		if rep := checkLinearizable(tc.ops, 10*time.Second); rep.status != LinearizableOK || len(rep.violations) > 0 {
			t.Errorf("%s: status %q, violations %+v; want ok", tc.name, rep.status, rep.violations)
		}
	}
	if rep := checkLinearizable([]Op{{Op: OpOK, Resource: "r", Fence: ptr(int64(1)), Value: json.RawMessage("1")}}, time.Second); rep.status != "" {
		t.Errorf("a history without reads was checked: %+v", rep)
	}
}

// TestLinearizeTimeoutIsUnknown: 30 overlapping writes of distinct values
// and a read of a value none wrote leave 2^30 orders to rule out; the check
// must say unknown within its bound, not safe and not a violation.
func TestLinearizeTimeoutIsUnknown(t *testing.T) {
	t.Parallel()
	var ops []Op
	for w := 1; w <= 30; w++ {
		ops = append(ops, Op{Op: OpInvoke, Resource: "r", Worker: w, AtMS: int64(w), Value: json.RawMessage(fmt.Sprint(w))})
	}
	for w := 1; w <= 30; w++ {
		ops = append(ops, Op{Op: OpOK, Resource: "r", Worker: w, AtMS: int64(100 + w), Value: json.RawMessage(fmt.Sprint(w))})
	}
	ops = append(ops, Op{Op: OpOK, Resource: "r", Worker: 31, AtMS: 200, Read: json.RawMessage(`"never written"`)})
	start := time.Now()
	rep := checkLinearizable(ops, 300*time.Millisecond)
	if rep.status != LinearizableUnknown || len(rep.violations) > 0 || !strings.Contains(rep.note, "unknown") {
		t.Fatalf("status %q, violations %+v, note %q; want unknown", rep.status, rep.violations, rep.note)
	}
	t.Logf("unknown after %s (bound 300ms)", time.Since(start))
}

var figuresOps = flag.Int("linearize.ops", 1000, "TestLinearizeFigures: the history's read-modify-writes")

// TestLinearizeFigures logs the check's time for a long history of three
// workers taking turns (the shape of a trial that found nothing), then with
// a lost update at its end (-linearize.ops sets the length).
func TestLinearizeFigures(t *testing.T) {
	t.Parallel()
	n := *figuresOps
	var ops []Op
	for i := 0; i < n; i++ {
		ops = append(ops, rmw(i%3+1, int64(i*10), int64(i*10+5), i, 0)...)
	}
	start := time.Now()
	rep := checkLinearizable(ops, time.Minute)
	if rep.status != LinearizableOK {
		t.Fatalf("%d ops: %q", n, rep.status)
	}
	t.Logf("%d read-modify-writes: linearizable in %s", n, time.Since(start))
	ops = append(ops, rmw(1, int64(n*10), int64(n*10+5), 0, 0)...) // a write back from the first read
	start = time.Now()
	rep = checkLinearizable(ops, time.Minute)
	if rep.status != LinearizableViolated || len(rep.violations[0].Rows) == 0 {
		t.Fatalf("%d ops and a lost update: %+v", n, rep)
	}
	t.Logf("%d read-modify-writes and a lost update: NOT_LINEARIZABLE in %s, cut to %d operations", n+1, time.Since(start), len(rep.violations[0].Rows))
}

// TestLostUpdateWorkerUnderPause: a real trial of a shell worker whose
// read-modify-write has no fence. Pauses past its lease lose updates; the
// fence judge has nothing to judge, the Porcupine check finds them.
func TestLostUpdateWorkerUnderPause(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Options{Command: []string{script(t, "lostupdate.sh")}, Duration: 12 * time.Second,
		FaultDuration: 1800 * time.Millisecond, Nemeses: []string{FaultPause}, Seed: 1, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != history.VerdictUnsafe || res.Linearizable != LinearizableViolated {
		t.Fatalf("verdict %s, linearizable %q, violations %+v; want unsafe by %s\nfaults %+v", res.Verdict, res.Linearizable, res.Violations, history.CodeNotLinearizable, res.Faults)
	}
	for _, v := range res.Violations {
		if v.Code != history.CodeNotLinearizable {
			t.Errorf("violation %+v: only the linearizability check can see this worker's lost updates", v)
		}
		if len(v.Rows) < 2 || len(v.Rows) >= res.Ops {
			t.Errorf("%d rows of %d ops: want the failing part, not the history: %q", len(v.Rows), res.Ops, v.Rows)
		}
	}
	t.Logf("%d ops; %s: %q", res.Ops, res.Violations[0].Detail, res.Violations[0].Rows)
}

// TestLostUpdateWorkerWithoutFaults: the same worker with no nemesis takes
// turns under its lock, so its read-modify-writes are linearizable: the
// check must see each one's written value, not only its read (a history
// of reads alone, 0 then 1, has no order).
func TestLostUpdateWorkerWithoutFaults(t *testing.T) {
	t.Parallel()
	res, err := Run(context.Background(), Options{Command: []string{script(t, "lostupdate.sh")}, Duration: 3 * time.Second,
		Nemeses: []string{}, Seed: 1, Grace: time.Second, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops < 4 || res.Linearizable != LinearizableOK || len(res.Violations) > 0 {
		t.Fatalf("%d ops, linearizable %q, violations %+v; want ok and none", res.Ops, res.Linearizable, res.Violations)
	}
}

// A linearizability check that ran out of time makes a run with nothing
// else found inconclusive, never safe (issue 33 §3: no "safe" about nothing).
func TestLinearizeUnknownIsNotSafe(t *testing.T) {
	res := Result{Ops: 12, Reports: []WorkerReport{{Worker: 1, Starts: 1}}, Linearizable: LinearizableUnknown}
	if v := verdict(res); v != history.VerdictInconclusive {
		t.Errorf("verdict %q with the check out of time, want %q", v, history.VerdictInconclusive)
	}
	res.Linearizable = LinearizableOK
	if v := verdict(res); v != history.VerdictSafe {
		t.Errorf("verdict %q with the check passed, want %q", v, history.VerdictSafe)
	}
}
