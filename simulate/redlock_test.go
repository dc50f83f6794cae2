package simulate

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/history"
)

// redlockGuards are the guards a Redlock run gets by default: all but
// fencing (Redlock issues no fencing token; --fencing turns on the store's
// counter).
func redlockGuards() Guards { return AllGuards().With("fencing", false) }

// The verdicts of issue 23: scenario B and an empty restart are unsafe
// even with fencing; the pause caught by the validity check and the
// delayed restart are safe; the pause after the check is unsafe unless the
// store compares a fence.
func TestRedlockBuiltinVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		want, fenced string
		codes        []string
	}{
		{"redlock-clock-jump", history.VerdictUnsafe, history.VerdictUnsafe, []string{history.CodeStaleWrite, history.CodeOverlap, history.CodeLockLost}},
		{"redlock-pause", history.VerdictSafe, history.VerdictSafe, nil},
		{"redlock-late-pause", history.VerdictUnsafe, history.VerdictSafe, []string{history.CodeStaleWrite}},
		{"redlock-restart", history.VerdictUnsafe, history.VerdictUnsafe, []string{history.CodeStaleWrite, history.CodeOverlap, history.CodeLockLost}},
		{"redlock-slow-boot", history.VerdictSafe, history.VerdictSafe, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBuiltin(t, tc.name, redlockGuards(), Overrides{})
			if r.Verdict != tc.want || !slices.Equal(ViolationCodes(r.Violations), sorted(tc.codes)) {
				t.Errorf("verdict %s %v, want %s %v", r.Verdict, ViolationCodes(r.Violations), tc.want, tc.codes)
			}
			if r.Nodes != 5 || r.FenceSource != FenceStore {
				t.Errorf("nodes %d, fence source %s", r.Nodes, r.FenceSource)
			}
			f := runBuiltin(t, tc.name, AllGuards(), Overrides{})
			if f.Verdict != tc.fenced || !f.Store.Correct {
				t.Errorf("--fencing: verdict %s, store %+v", f.Verdict, f.Store)
			}
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// Scenario B: node 3's clock jump ends A's key there, B takes nodes 3–5
// while A still believes it holds nodes 1–3; the quorum passes to B at 6s.
func TestRedlockClockJumpWhy(t *testing.T) {
	r := runBuiltin(t, "redlock-clock-jump", redlockGuards(), Overrides{})
	e := find(t, r, 5000, "redis", "expire")
	if !strings.Contains(e.Note, "node 3") || e.Nodes[2].Holder != "" || e.Nodes[0].Holder != "A" || e.Lock != nil {
		t.Errorf("expire at 5s: %+v", e)
	}
	q := find(t, r, 6000, "B", "quorum")
	if !q.OK || q.Lock == nil || q.Lock.Holder != "B" || q.Nodes[0].Holder != "A" || q.Nodes[2].Holder != "B" {
		t.Errorf("B's quorum at 6s: %+v", q)
	}
	v, ok := violation(r, history.CodeOverlap)
	if !ok || v.Message != "A and B both in the critical section 6s–11s" {
		t.Errorf("overlap: %+v", v)
	}
}

// The pause in flight: A's quorum check runs when it wakes, 40s after its
// SETs, and fails on the validity; it releases nothing of B's.
func TestRedlockPauseValidity(t *testing.T) {
	r := runBuiltin(t, "redlock-pause", redlockGuards(), Overrides{})
	q := find(t, r, 40000, "A", "quorum")
	if q.OK || !strings.Contains(q.Note, "validity 30s − 40s elapsed − 302ms drift = −10.302s: failed") {
		t.Errorf("A's check at 40s: %+v", q)
	}
	if w := find(t, r, 40000, "A", "write"); w.OK {
		t.Errorf("A wrote: %+v", w)
	}
}

// A scenario file of nodes: 5 replays scenario B as the built-in does.
func TestRedlockScenarioBFile(t *testing.T) {
	data, err := os.ReadFile("../testdata/scenarios/redlock-scenario-b.yaml") // also the example of docs/redlock-debate.md
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Nodes != 5 || sc.Guards.Fencing || sc.FenceSource != FenceStore {
		t.Fatalf("nodes %d, guards %+v, fence source %s", sc.Nodes, sc.Guards, sc.FenceSource)
	}
	r := run(t, sc)
	want := []string{history.CodeLockLost, history.CodeOverlap, history.CodeStaleWrite}
	if r.Verdict != history.VerdictUnsafe || !slices.Equal(ViolationCodes(r.Violations), sorted(want)) {
		t.Errorf("verdict %s %v", r.Verdict, ViolationCodes(r.Violations))
	}
	out, err := MarshalFile(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseFile(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if dump(run(t, again)) != dump(r) {
		t.Errorf("the written file replays differently:\n%s", out)
	}
}

// What nodes cannot mean is refused with one line naming the value.
func TestRedlockBadInput(t *testing.T) {
	head := "name: x\npolicy: {lease: 30s}\n"
	for _, tc := range []struct{ file, want string }{
		{head + "nodes: 5\nevents:\n  - {at: 0s, do: crash, node: 0}\n", "line 5: events[0].node: 0 is below 1, the smallest accepted"},
		{head + "nodes: 5\nevents:\n  - {at: 0s, do: crash, node: 6}\n", "line 5: events[0].node: node 6 is not one of 1 to 5 (nodes: 5)"},
		{head + "nodes: 3\nevents:\n  - {at: 0s, actor: A, do: partition, for: 1s, nodes: [1, 4]}\n", "line 5: events[0].node: node 4 is not one of 1 to 3 (nodes: 3)"},
		{head + "nodes: 3\nevents:\n  - {at: 0s, actor: A, do: partition, for: 1s, nodes: [1, 1]}\n", "line 5: events[0].nodes: node 1 is listed twice"},
		{head + "events:\n  - {at: 0s, do: clock_jump, by: 1s, node: 1}\n", "line 4: events[0].node: clock_jump targets a node, but the scenario has one node"},
		{head + "events:\n  - {at: 0s, do: restart}\n", "line 4: events[0]: restart takes node: K"},
		{head + "nodes: 10\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 3: nodes: 10 is above 9, the largest accepted"},
		{head + "nodes: 5\nfence_source: redis\nevents:\n  - {at: 0s, actor: A, do: acquire}\n", "line 4: fence_source: fence source redis over 5 Redlock nodes: there is no single INCR"},
		{head + "nodes: 5\nevents:\n  - {at: 0s, do: failover}\n", "line 5: events[0]: in a 5-node scenario failover needs node: K"},
		{head + "nodes: 5\nevents:\n  - {at: 0s, actor: A, do: acquire, node: 1}\n", "line 5: events[0].node: acquire takes no node"},
		{head + "nodes: 5\nevents:\n  - {at: 0s, actor: A, do: crash, node: 1}\n", "line 5: events[0].actor: a crash hits an actor (a process) or nodes, not both"},
	} {
		_, err := ParseFile([]byte(tc.file))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := Builtin("redlock-clock-jump", AllGuards(), Overrides{FenceSource: FenceRedis}); err == nil || !strings.Contains(err.Error(), "no single INCR") {
		t.Errorf("--fence-source redis: %v", err)
	}
}

// Exploration varies the node faults too (clock_jump's time and size,
// the partitions) and finds the overlap of scenario B.
func TestRedlockExplore(t *testing.T) {
	sc, err := Builtin("redlock-slow-boot", redlockGuards(), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(context.Background(), sc, ExploreOptions{Grid: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Dimensions, func(d Dimension) bool { return d.Action == ActRestart }) {
		t.Errorf("restart is not varied: %+v", res.Dimensions)
	}
	if res.Verdict != history.VerdictUnsafe || res.Counterexample == nil {
		t.Fatalf("a restart sooner than the lease should break it: %+v", res.ByCode)
	}
	ce, err := ParseFile([]byte(res.Counterexample.File))
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Counterexample.File)
	}
	if r := run(t, ce); r.Verdict != history.VerdictUnsafe || r.Nodes != 5 {
		t.Errorf("counterexample replays %s on %d nodes", r.Verdict, r.Nodes)
	}
}

// Renewals over 3 nodes: a majority keeps the lease; cut off from two
// nodes the renewer cannot reach a majority, so cancel-on-loss stops the
// work before the lease could have passed on, and B takes over. A node's
// failover loses A's key there without costing A its majority.
func TestRedlockRenewFailover(t *testing.T) {
	sc, err := ParseFile([]byte(`name: renew
nodes: 3
policy: {lease: 10s, renew_every: 3s}
replication_lag: 2s
events:
  - {at: 0s, actor: A, do: acquire}
  - {at: 0s, actor: A, do: work, for: 30s}
  - {at: 1s, do: failover, node: 3}
  - {at: 4s, actor: A, do: partition, nodes: [1, 2], for: 20s}
  - {at: 14s, actor: B, do: acquire, wait: 5s}
  - {at: 14s, actor: B, do: release}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, sc)
	if e := find(t, r, 1000, "redis", "failover"); e.Nodes[2].Holder != "" || e.Lock == nil || e.Lock.Holder != "A" {
		t.Errorf("failover of node 3: %+v", e)
	}
	if e := find(t, r, 3000, "A", "renew"); !e.OK || e.Note != "PEXPIRE 10s on nodes 1, 2" {
		t.Errorf("renewal at 3s: %+v", e)
	}
	if e := find(t, r, 6000, "A", "renew"); e.OK || !strings.HasPrefix(e.Note, "cannot reach a majority (nodes 1, 2 unreachable)") {
		t.Errorf("renewal at 6s: %+v", e)
	}
	if e := find(t, r, 12898, "A", "cancel"); !e.OK {
		t.Errorf("cancel at 12.898s: %+v", e)
	}
	if e := find(t, r, 14000, "B", "quorum"); !e.OK {
		t.Errorf("B's quorum at 14s: %+v", e)
	}
	if r.Verdict != history.VerdictSafe {
		t.Errorf("verdict %s: %v", r.Verdict, r.Violations)
	}
}

// Without owner checks a late release deletes the next holder's keys on
// every node it reaches; with them it is refused node by node.
func TestRedlockBlindRelease(t *testing.T) {
	file := `name: blind
nodes: 3
policy: {lease: 10s}
guards: {owner_check: %s}
events:
  - {at: 0s, actor: A, do: acquire}
  - {at: 1s, actor: A, do: pause, for: 14s}
  - {at: 1s, actor: A, do: release}
  - {at: 11s, actor: B, do: acquire}
  - {at: 11s, actor: B, do: work, for: 10s}
`
	for _, tc := range []struct{ check, note, code string }{
		{"false", "blind DEL deleted B's key on nodes 1, 2, 3", history.CodeForeignRelease},
		{"true", "refused on nodes 1, 2, 3: not owner (B holds it)", ""},
	} {
		sc, err := ParseFile([]byte(strings.Replace(file, "%s", tc.check, 1)))
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, sc)
		if e := find(t, r, 15000, "A", "release"); e.Note != tc.note {
			t.Errorf("owner_check %s: release %+v", tc.check, e)
		}
		if _, ok := violation(r, history.CodeForeignRelease); ok != (tc.code != "") {
			t.Errorf("owner_check %s: %v", tc.check, r.Violations)
		}
	}
}
